/* tui/term.c - the curses backend (see term.h). */
#ifndef NCURSES_WIDECHAR
#define NCURSES_WIDECHAR 1
#endif
#include "tui/term.h"

#include <curses.h>
#include <term.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wchar.h>

static SCREEN *term_screen;
static volatile sig_atomic_t term_active; /* curses is up: a crash must endwin */
static volatile sig_atomic_t term_quit;   /* SIGINT / SIGTERM / SIGHUP seen: its number */
static int term_ncolors;
static int term_atexit_done;
static int term_mouse_x = -1, term_mouse_y = -1;

static void on_quit(int sig) { term_quit = sig; }

/* A crash: put the terminal back before dying. endwin is not
 * async-signal-safe, but the process is about to die anyway and a shell
 * left in raw mode in the alternate screen is the worse outcome. The signal
 * is then re-raised with its default action (core dump, exit status). */
static void on_crash(int sig)
{
    if (term_active) {
        term_active = 0;
        endwin();
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install(int sig, void (*fn)(int), int flags)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = fn;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = flags;
    sigaction(sig, &sa, NULL);
}

/* 24 owner colours on a 256-colour terminal: hues spread apart, none too
 * dark for a black background. */
static const short owner256[PF_OWNER_COLORS] = {196, 46,  33,  226, 201, 51,  208, 141,
                                                118, 39,  220, 163, 37,  173, 147, 214,
                                                160, 34,  63,  190, 205, 44,  172, 99};
static const short owner8[6] = {COLOR_RED,     COLOR_GREEN, COLOR_YELLOW,
                                COLOR_BLUE,    COLOR_MAGENTA, COLOR_CYAN};

static void setup_colors(void)
{
    term_ncolors = 0;
    if (!has_colors() || start_color() != OK)
        return;
    use_default_colors();
    int rich = COLORS >= 256;
    term_ncolors = rich ? 256 : 8;
    struct {
        int col;
        short fg;
    } base[] = {
        {PF_COL_TITLE, COLOR_CYAN},      {PF_COL_HEADER, rich ? 75 : COLOR_CYAN},
        {PF_COL_DIM, rich ? 242 : -1},   {PF_COL_GOOD, COLOR_GREEN},
        {PF_COL_WARN, COLOR_YELLOW},     {PF_COL_BAD, COLOR_RED},
        {PF_COL_RESERVE, COLOR_MAGENTA}, {PF_COL_KEY, COLOR_CYAN},
        {PF_COL_RUNNING, rich ? 40 : COLOR_GREEN},    {PF_COL_STALLED, rich ? 214 : COLOR_YELLOW},
        {PF_COL_RECOMPUTE, rich ? 45 : COLOR_CYAN},   {PF_COL_SWAPPED, rich ? 63 : COLOR_BLUE},
        {PF_COL_SHARED, rich ? 255 : COLOR_WHITE},    {PF_COL_FLASH, rich ? 196 : COLOR_RED},
        {PF_COL_ADMIT, rich ? 118 : COLOR_GREEN},
        /* age: a cold-to-hot ramp, young sequences blue, old ones red */
        {PF_COL_AGE0, rich ? 27 : COLOR_BLUE},        {PF_COL_AGE0 + 1, rich ? 37 : COLOR_CYAN},
        {PF_COL_AGE0 + 2, rich ? 148 : COLOR_GREEN},  {PF_COL_AGE0 + 3, rich ? 214 : COLOR_YELLOW},
        {PF_COL_AGE0 + 4, rich ? 196 : COLOR_RED},
        {PF_COL_PREFILL, rich ? 159 : COLOR_WHITE},   {PF_COL_CACHED, rich ? 66 : COLOR_BLUE},
    };
    for (size_t i = 0; i < sizeof base / sizeof base[0]; i++)
        if (base[i].col < COLOR_PAIRS)
            init_pair((short)base[i].col, base[i].fg, -1);
    for (int k = 0; k < PF_OWNER_COLORS; k++)
        if (PF_COL_OWNER0 + k < COLOR_PAIRS)
            init_pair((short)(PF_COL_OWNER0 + k), rich ? owner256[k] : owner8[k % 6], -1);
}

/* A terminal that terminfo does not know or cannot address, refused
 * with one message whichever check found it. */
static void term_refused(const char *t, char *err, size_t errlen)
{
    snprintf(err, errlen,
             "cannot drive the terminal '%s' (unknown to terminfo, or no cursor addressing); "
             "try --headless", t);
}

/* Whether the dashboard can drive this terminal: stdin and stdout are
 * one, TERM names it, and terminfo knows it with cursor addressing (the
 * dashboard moves the cursor anywhere on the screen: a terminal without
 * it, TERM=dumb or a printing terminal, cannot show it, and curses would
 * scroll garbage). Terminfo is asked without touching the terminal. The
 * TERM value, or NULL with err set. */
static const char *term_usable(char *err, size_t errlen)
{
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
        snprintf(err, errlen, "the dashboard needs a terminal (stdin/stdout are not one); try --headless");
        return NULL;
    }
    const char *t = getenv("TERM");
    if (!t || !t[0]) {
        snprintf(err, errlen, "TERM is not set; the dashboard needs a terminal type (or use --headless)");
        return NULL;
    }
    int tierr = 0;
    int usable = setupterm(t, STDOUT_FILENO, &tierr) == OK;
    if (usable) {
        const char *cup = tigetstr("cup");
        usable = cup != NULL && cup != (const char *)-1;
        del_curterm(cur_term);
    }
    if (!usable)
        term_refused(t, err, errlen);
    return usable ? t : NULL;
}

/* The screen's modes, once curses has it. */
static void term_modes(int no_color)
{
    cbreak(); /* not raw(): Ctrl-C stays a signal, handled below */
    noecho();
    nonl();
    keypad(stdscr, TRUE);
    curs_set(0);
    /* no typeahead check during refresh: curses would poll stdin and flush
     * its output before every few lines; keys are read between frames */
    typeahead(-1);
    /* ncurses 6.x flushes its output after every cursor movement while the
     * screen is still in its "initial" state (meant for low-level terminfo
     * programs calling mvcur), which turned one frame into hundreds of tiny
     * writes. One refresh / endwin / refresh cycle moves it to "running":
     * measured with strace, about 800 writes/s became about 27 (one per
     * frame) on a busy 120x40 grid. */
    refresh();
    endwin();
    refresh();
    if (!no_color)
        setup_colors();
    /* Esc closes a panel: wait 25 ms (not curses' default second) to tell
     * a lone Esc from the start of an escape sequence; a local terminal
     * sends a whole sequence in one write */
    set_escdelay(25);
    /* button-1 presses on the grid and the key line; no drag reports, and
     * no click-interval wait, so a press acts at once */
    mouseinterval(0);
    mousemask(BUTTON1_PRESSED | BUTTON1_CLICKED, NULL);
}

int pf_term_open(int no_color, char *err, size_t errlen)
{
    if (term_active)
        return 0;
    const char *t = term_usable(err, errlen);
    if (!t)
        return -1;
    term_screen = newterm(NULL, stdout, stdin);
    if (!term_screen) {
        term_refused(t, err, errlen);
        return -1;
    }
    set_term(term_screen);
    term_active = 1;
    if (!term_atexit_done) {
        atexit(pf_term_close);
        term_atexit_done = 1;
    }
    term_modes(no_color);
    /* after newterm, so ours replace curses' own SIGINT/SIGTERM handlers;
     * curses keeps its SIGWINCH handler, which gives KEY_RESIZE */
    install(SIGINT, on_quit, 0);
    install(SIGTERM, on_quit, 0);
    install(SIGHUP, on_quit, 0);
    install(SIGSEGV, on_crash, SA_RESETHAND);
    install(SIGABRT, on_crash, SA_RESETHAND);
    install(SIGBUS, on_crash, SA_RESETHAND);
    install(SIGFPE, on_crash, SA_RESETHAND);
    return 0;
}

void pf_term_close(void)
{
    if (!term_active)
        return;
    term_active = 0;
    curs_set(1);
    endwin();
    if (term_screen) {
        delscreen(term_screen);
        term_screen = NULL;
    }
    fflush(stdout);
}

void pf_term_size(int *w, int *h)
{
    int y, x;
    getmaxyx(stdscr, y, x);
    *w = x;
    *h = y;
}

static attr_t map_attr(uint8_t a)
{
    attr_t r = A_NORMAL;
    if (a & PF_ATTR_BOLD)
        r |= A_BOLD;
    if (a & PF_ATTR_DIM)
        r |= A_DIM;
    if (a & PF_ATTR_REVERSE)
        r |= A_REVERSE;
    if (a & PF_ATTR_UNDERLINE)
        r |= A_UNDERLINE;
    return r;
}

void pf_term_draw(const pf_cells *b, int full)
{
    if (!term_active)
        return;
    if (full)
        clearok(curscr, TRUE);
    int sw, sh;
    pf_term_size(&sw, &sh);
    int w = b->w < sw ? b->w : sw, h = b->h < sh ? b->h : sh;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const pf_cell *c = &b->cells[(size_t)y * (size_t)b->w + (size_t)x];
            short pair = 0;
            if (term_ncolors && c->color < COLOR_PAIRS)
                pair = c->color;
            wchar_t wc[2] = {(wchar_t)c->ch, 0};
            cchar_t cc;
            setcchar(&cc, wc, map_attr(c->attr), pair, NULL);
            /* the bottom-right cell returns ERR (the cursor cannot advance)
             * but is drawn; nothing to handle */
            mvadd_wch(y, x, &cc);
        }
    refresh();
}

int pf_term_getkey(int timeout_ms)
{
    if (!term_active)
        return PF_TERM_KEY_NONE;
    timeout(timeout_ms);
    int ch = getch();
    if (ch == ERR)
        return PF_TERM_KEY_NONE;
    switch (ch) {
    case KEY_RESIZE:
        return PF_TERM_KEY_RESIZE;
    case KEY_F(1):
        return PF_TERM_KEY_F1;
    case KEY_F(10):
        return PF_TERM_KEY_F10;
    case KEY_UP:
        return PF_TERM_KEY_UP;
    case KEY_DOWN:
        return PF_TERM_KEY_DOWN;
    case KEY_LEFT:
        return PF_TERM_KEY_LEFT;
    case KEY_RIGHT:
        return PF_TERM_KEY_RIGHT;
    case KEY_MOUSE: {
        MEVENT ev;
        if (getmouse(&ev) != OK || !(ev.bstate & (BUTTON1_PRESSED | BUTTON1_CLICKED)))
            return PF_TERM_KEY_NONE;
        term_mouse_x = ev.x;
        term_mouse_y = ev.y;
        return PF_TERM_KEY_MOUSE;
    }
    default:
        return ch >= KEY_MIN ? PF_TERM_KEY_NONE : ch; /* other curses keys: ignored */
    }
}

void pf_term_mouse(int *x, int *y)
{
    *x = term_mouse_x;
    *y = term_mouse_y;
}

int pf_term_quit_requested(void) { return (int)term_quit; }

int pf_term_colors(void) { return term_ncolors; }
