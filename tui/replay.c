/* tui/replay.c - playing a recording back (see replay.h).
 *
 * A first pass reads every record once (checking it) and keeps its file
 * offset, so seeking is an fseek and one read; only the record on screen is
 * in memory.
 */
#include "tui/replay.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/clock.h"
#include "core/err.h"
#include "tui/cli.h"
#include "tui/dash.h"
#include "tui/hist.h"
#include "tui/look.h"
#include "tui/record.h"
#include "tui/render.h"
#include "tui/term.h"

typedef struct {
    pf_dash_look look; /* the dashboard's look flags */
    int headless, width, height;
    const char *file;
} replay_opts;

static const char replay_summary[] =
    "Play back a session recorded with `pagefault --record FILE` (live or --headless).\n"
    "Keys: space pause, s step, Left/Right seek 10 records, f/F speed, r start, c t < > as live, q quit.";

/* Index the records: offsets[i] of record i. Returns the count, or < 0. */
static long index_records(FILE *f, const char *name, long **offsets, char *err, size_t errlen)
{
    pf_sim_snapshot s;
    memset(&s, 0, sizeof s);
    long n = 0, cap = 0;
    *offsets = NULL;
    for (;;) {
        long at = ftell(f);
        int tick, fin;
        int rc = pf_record_get(f, name, &s, &tick, &fin, err, errlen);
        if (rc == 0)
            break;
        if (rc < 0) {
            n = -1;
            break;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            long *p = realloc(*offsets, (size_t)cap * sizeof *p);
            if (!p) {
                snprintf(err, errlen, "%s: out of memory for the index", name);
                n = -1;
                break;
            }
            *offsets = p;
        }
        (*offsets)[n++] = at;
    }
    pf_sim_snapshot_free(&s);
    return n;
}

static int load(FILE *f, const char *name, long off, pf_sim_snapshot *s, int *tick, int *fin)
{
    char err[256];
    if (fseek(f, off, SEEK_SET) != 0)
        return -1;
    return pf_record_get(f, name, s, tick, fin, err, sizeof err) == 1 ? 0 : -1;
}

static int replay_headless(replay_opts *o, FILE *f)
{
    pf_cells buf = {0, 0, NULL};
    pf_sim_snapshot s;
    memset(&s, 0, sizeof s);
    pf_hist hist;
    memset(&hist, 0, sizeof hist);
    int status = 0;
    if (pf_cells_resize(&buf, o->width, o->height) != 0) {
        fprintf(stderr, "pagefault replay: out of memory for a %dx%d screen\n", o->width, o->height);
        return 1;
    }
    pf_dash_view v;
    memset(&v, 0, sizeof v);
    v.snap = &s;
    pf_look_view(&o->look, &v);
    v.hist = &hist;
    for (long nrec = 0;; nrec++) {
        char err[256];
        int tick, fin;
        int rc = pf_record_get(f, o->file, &s, &tick, &fin, err, sizeof err);
        if (rc == 0 && nrec == 0) {
            /* a header and nothing else (a recording cut before its first
             * snapshot): refused as the live replay refuses it, not an
             * empty success */
            fprintf(stderr, "pagefault replay: %s: no records\n", o->file);
            status = 2;
        }
        if (rc == 0)
            break;
        if (rc < 0) {
            fprintf(stderr, "pagefault replay: %s\n", err);
            status = 2;
            break;
        }
        pf_hist_update(&hist, &s);
        pf_render_screen(&buf, &v, NULL);
        printf(fin ? "--- tick %d (final) ---\n" : "--- tick %d ---\n", tick);
        pf_dash_dump(stdout, &buf);
    }
    pf_hist_free(&hist);
    pf_sim_snapshot_free(&s);
    pf_cells_free(&buf);
    return status;
}

/* Where the player is and how it plays: what the keys change. */
typedef struct {
    long at, n;        /* the record on screen, of n              */
    int paused;
    double rate;       /* records per second                      */
    pf_dash_look look; /* keys c, t, < and > change it            */
    char msg[128];     /* a line for the status bar, or ""        */
} player;

/* One key's command. Returns 1 for quit. */
static int player_key(player *pl, int cmd)
{
    switch (cmd) {
    case PF_DASH_CMD_QUIT:
        return 1;
    case PF_DASH_CMD_PAUSE_TOGGLE:
        pl->paused = !pl->paused;
        break;
    case PF_DASH_CMD_STEP:
        pl->paused = 1;
        pl->at = pl->at < pl->n - 1 ? pl->at + 1 : pl->at;
        break;
    case PF_DASH_CMD_CURSOR_LEFT:
        pl->at = pl->at >= 10 ? pl->at - 10 : 0;
        break;
    case PF_DASH_CMD_CURSOR_RIGHT:
        pl->at = pl->at + 10 < pl->n ? pl->at + 10 : pl->n - 1;
        break;
    case PF_DASH_CMD_SLOWER:
        pl->rate = pl->rate / 2 < 0.25 ? 0.25 : pl->rate / 2;
        break;
    case PF_DASH_CMD_FASTER:
        pl->rate = pl->rate * 2 > 1000 ? 1000 : pl->rate * 2;
        break;
    case PF_DASH_CMD_RESET:
        pl->at = 0;
        break;
    case PF_DASH_CMD_COLORING:
        pl->look.coloring = (pl->look.coloring + 1) % PF_COLORING_COUNT;
        break;
    case PF_DASH_CMD_CHARTS:
        pl->look.charts = !pl->look.charts;
        break;
    case PF_DASH_CMD_ZOOM_IN:
    case PF_DASH_CMD_ZOOM_OUT:
        pl->look.window = pf_render_window_zoom(pl->look.window, cmd == PF_DASH_CMD_ZOOM_OUT);
        break;
    default:
        snprintf(pl->msg, sizeof pl->msg, "a live key: not here"); /* fits the status at 120 columns */
        break;
    }
    return 0;
}

/* The file's records, indexed (*off: each one's offset, the caller's to
 * free): how many, or -1 with the message printed (none is an error too). */
static long replay_index(const replay_opts *o, FILE *f, long **off)
{
    char err[256] = "";
    long n = index_records(f, o->file, off, err, sizeof err);
    if (n < 0)
        fprintf(stderr, "pagefault replay: %s\n", err);
    else if (n == 0)
        fprintf(stderr, "pagefault replay: %s: no records\n", o->file);
    return n > 0 ? n : -1;
}

/* The record the player is at, loaded into s when it moved (the charts'
 * history restarts when it moved back). 0, or -1 when it cannot be read
 * again. */
static int replay_show(const player *pl, FILE *f, const char *file, const long *off, long *shown,
                       pf_sim_snapshot *s, pf_hist *hist)
{
    if (pl->at == *shown)
        return 0;
    if (pl->at < *shown)
        pf_hist_clear(hist);
    int tick = 0, fin = 0;
    if (load(f, file, off[pl->at], s, &tick, &fin) != 0)
        return -1;
    pf_hist_update(hist, s);
    *shown = pl->at;
    return 0;
}

/* One frame: the snapshot with the player's status line, into buf. */
static void replay_draw(pf_cells *buf, const player *pl, long n, const pf_sim_snapshot *s,
                        const pf_hist *hist)
{
    char st[160];
    snprintf(st, sizeof st, "replay %ld/%ld%s, %.3g rec/s%s%s", pl->at + 1, n,
             pl->paused ? " paused" : "", pl->rate, pl->msg[0] ? " | " : "", pl->msg);
    pf_dash_view v;
    memset(&v, 0, sizeof v);
    v.snap = s;
    pf_look_view(&pl->look, &v);
    v.status = st;
    v.hist = hist;
    pf_render_screen(buf, &v, NULL);
}

static int replay_live(replay_opts *o, FILE *f)
{
    char err[256] = "";
    long *off = NULL;
    const long n = replay_index(o, f, &off);
    if (n < 0 || pf_term_open(o->look.no_color, err, sizeof err) != 0) {
        if (n > 0)
            fprintf(stderr, "pagefault replay: %s\n", err);
        free(off);
        return 2;
    }
    pf_cells buf = {0, 0, NULL};
    pf_sim_snapshot s;
    memset(&s, 0, sizeof s);
    pf_hist hist;
    memset(&hist, 0, sizeof hist);
    int status = 0, w, h;
    /* 10 records a second: the live recorder keeps about 10 */
    player pl = {.at = 0, .n = n, .paused = 0, .rate = 10, .look = o->look, .msg = ""};
    long shown = -1;
    double next = pf_clock_s();
    pf_term_size(&w, &h);
    pf_cells_resize(&buf, w > 0 ? w : 1, h > 0 ? h : 1);
    for (;;) {
        int sig = pf_term_quit_requested();
        if (sig) {
            status = 128 + sig;
            break;
        }
        double t = pf_clock_s();
        if (!pl.paused && t >= next && pl.at < n - 1) {
            pl.at++;
            next = t + 1.0 / pl.rate;
        }
        if (replay_show(&pl, f, o->file, off, &shown, &s, &hist) != 0) {
            pf_term_close();
            fprintf(stderr, "pagefault replay: %s: cannot read record %ld again\n", o->file, pl.at);
            status = 1;
            break;
        }
        replay_draw(&buf, &pl, n, &s, &hist);
        pf_term_draw(&buf, 0);
        int key = pf_term_getkey(pl.paused ? 250 : 33);
        if (key == PF_TERM_KEY_NONE)
            continue;
        pl.msg[0] = 0;
        if (key == PF_TERM_KEY_RESIZE) {
            pf_term_size(&w, &h);
            if (w > 0 && h > 0)
                pf_cells_resize(&buf, w, h);
            continue;
        }
        if (player_key(&pl, pf_dash_key(key)))
            break;
    }
    pf_term_close();
    pf_hist_free(&hist);
    pf_sim_snapshot_free(&s);
    pf_cells_free(&buf);
    free(off);
    return status;
}

int pf_cmd_replay(int argc, char **argv)
{
    const char *prog = "pagefault replay";
    replay_opts o;
    memset(&o, 0, sizeof o);
    o.width = 120;
    o.height = 40;
    pf_look_default(&o.look);
    /* four rows of its own, the look's, and a zeroed row to end the table */
    pf_opt opts[4 + PF_LOOK_NOPTS + 1] = {
        {"file", PF_OPT_STRING, &o.file, 0, 0, NULL, "FILE", "the recording (also the first argument)", 0},
        {"headless", PF_OPT_FLAG, &o.headless, 0, 0, NULL, NULL, "print every record as text", 0},
        {"width", PF_OPT_INT, &o.width, PF_DASH_MIN_W, 1000, NULL, "COLS", "headless: screen width", 0},
        {"height", PF_OPT_INT, &o.height, PF_DASH_MIN_H, 1000, NULL, "ROWS", "headless: screen height", 0},
    };
    pf_look_opts(&o.look, opts + 4);
    /* `pagefault replay FILE [flags]`: the file may come first */
    char **av = argv;
    int ac = argc;
    if (argc >= 2 && argv[1][0] != '-') {
        /* the flags parsed as argv[1..] with the program's name in FILE's
         * slot (argv's pointers are the program's to change, C11 5.1.2.2.1) */
        o.file = argv[1];
        argv[1] = argv[0];
        av = argv + 1;
        ac = argc - 1;
    }
    const char *first = o.file;
    int rc = pf_cli_start(prog, replay_summary, opts, ac, av);
    if (rc != PF_CLI_GO)
        return rc;
    if (!o.file)
        o.file = first;
    if (!o.file)
        return pf_cli_error(prog, "which recording? (pagefault replay FILE)");
    if (pf_cli_find(opts, "width")->seen + pf_cli_find(opts, "height")->seen && !o.headless)
        return pf_cli_error(prog, "--width and --height need --headless");
    pf_look_settle(&o.look);
    FILE *f = fopen(o.file, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot open '%s': %s\n", prog, o.file, strerror(errno));
        return 2;
    }
    struct stat st; /* a directory opens for reading on Linux; its read fails */
    if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
        fclose(f);
        fprintf(stderr, "%s: cannot open '%s': %s\n", prog, o.file, strerror(EISDIR));
        return 2;
    }
    char err[256];
    int status;
    if (pf_record_open(f, o.file, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", prog, err);
        status = 2;
    } else
        status = o.headless ? replay_headless(&o, f) : replay_live(&o, f);
    fclose(f);
    return status;
}
