/* tests/test_tui_progress.c - the progress lines of long `pagefault sim`
 * runs (tui/progress.h). A plain executable with the label "race", so CI
 * also runs it under ThreadSanitizer: the reporter reads a simulator's
 * statistics while pf_sim_run steps it on the main thread.
 * The reporter writes into a pipe that the main thread drains, so no FILE
 * is shared between threads. Each check counts what it saw wrong; main
 * prints each failure and exits 1 on any. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "sim/sim.h"
#include "tui/progress.h"

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: %s: ", __FILE__, __LINE__, #cond);                             \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* A pipe whose write end the reporter gets as a FILE. */
typedef struct {
    int rd;
    FILE *wr;
    char text[1 << 16];
    size_t len;
} sink;

static int sink_open(sink *s)
{
    int fd[2];
    if (pipe(fd) != 0)
        return -1;
    s->rd = fd[0];
    s->wr = fdopen(fd[1], "w");
    s->len = 0;
    s->text[0] = 0;
    return s->wr ? 0 : -1;
}

/* Reads what has come, waiting up to `wait_ms` for the first byte. */
static void sink_drain(sink *s, int wait_ms)
{
    struct pollfd p = {s->rd, POLLIN, 0};
    while (poll(&p, 1, wait_ms) > 0 && s->len + 1 < sizeof s->text) {
        ssize_t n = read(s->rd, s->text + s->len, sizeof s->text - 1 - s->len);
        if (n <= 0)
            break;
        s->len += (size_t)n;
        s->text[s->len] = 0;
        wait_ms = 0;
    }
}

/* Closing the write end after pf_progress_stop: the rest is read to EOF. */
static void sink_close(sink *s)
{
    fclose(s->wr);
    sink_drain(s, 1000);
    close(s->rd);
}

static int count_lines(const char *t)
{
    int n = 0;
    for (; *t; t++)
        n += *t == '\n';
    return n;
}

static pf_sim *make_sim(pf_jobs *j, int njobs)
{
    if (pf_jobs_generate(j, 7, njobs, pf_mix_seed(), 0.0, 512) != PF_OK)
        return NULL;
    pf_sim_params p;
    pf_sim_params_default(&p);
    p.cfg.max_seq_len = 512;
    p.cfg.pool_blocks = 512;
    char err[256];
    pf_sim *s = pf_sim_create(&p, j, err, sizeof err);
    if (!s)
        fprintf(stderr, "test_tui_progress: %s\n", err);
    return s;
}

/* What each check runs on: a simulator over `njobs` requests and the pipe
 * its reporter writes to. */
typedef struct {
    pf_jobs j;
    pf_sim *s;
    sink k;
} fixture;

static void fixture_free(fixture *f)
{
    pf_sim_destroy(f->s);
    pf_jobs_free(&f->j);
}

/* 0, or -1 (counted as a failure, nothing left to free). */
static int fixture_open(fixture *f, int njobs)
{
    memset(f, 0, sizeof *f);
    f->s = make_sim(&f->j, njobs);
    if (f->s && sink_open(&f->k) == 0)
        return 0;
    CHECK(0, "set-up failed");
    fixture_free(f);
    return -1;
}

static void sleep_ms(long ms)
{
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0 && errno == EINTR) {
    }
}

/* Lines come while a run goes and after it, until it is removed; the
 * requests finished never go down and end at the run's total and step. */
static void lines_follow_a_run(void)
{
    enum { NJOBS = 3000 };
    fixture f;
    if (fixture_open(&f, NJOBS) != 0)
        return;
    pf_sim *s = f.s;
    sink *k = &f.k;
    pf_progress *p = pf_progress_start(k->wr, "t", 1, 0.001, 0.01);
    CHECK(p != NULL, "the reporter did not start");
    int slot = pf_progress_add(p, s, 0, "paged");
    CHECK(slot >= 0, "a free reporter gave no slot");
    pf_sim_stats st;
    CHECK(pf_sim_run(s, &st) == PF_OK, "the run failed");
    sleep_ms(100); /* lines of the finished run, still registered */
    pf_progress_remove(p, slot);
    pf_progress_stop(p);
    sink_close(k);

    int lines = count_lines(k->text);
    CHECK(lines >= 2, "%d lines in 100 ms at one every 10 ms:\n%s", lines, k->text);
    long long prev = -1, fin = -1, step = -1;
    for (char *l = k->text; *l; l = strchr(l, '\n') + 1) {
        int tot = 0, done = -1, runs = 0, at = 0;
        int got = sscanf(l, "t: %*f s: paged %lld of %d requests finished, step %lld (%d of %d runs done)%n",
                         &fin, &tot, &step, &done, &runs, &at);
        CHECK(got == 5 && l[at] == '\n', "a line not in the format: %.*s", (int)(strchr(l, '\n') - l), l);
        CHECK(tot == NJOBS && done == 0 && runs == 1, "total %d, runs %d of %d", tot, done, runs);
        CHECK(fin >= prev, "finished went down: %lld after %lld", fin, prev);
        prev = fin;
    }
    CHECK(fin == NJOBS && step == st.step, "the last line: %lld finished at step %lld; the run: %lld at %lld",
          fin, step, (long long)st.finished, (long long)st.step);
    fixture_free(&f);
}

/* A run removed before the first line's time writes nothing, and stop
 * wakes the reporter at once rather than at its deadline. */
static void nothing_before_the_first_line(void)
{
    fixture f;
    if (fixture_open(&f, 50) != 0)
        return;
    pf_sim *s = f.s;
    sink *k = &f.k;
    pf_progress *p = pf_progress_start(k->wr, "t", 1, 3600.0, 3600.0);
    int slot = pf_progress_add(p, s, 0, "paged");
    pf_sim_stats st;
    CHECK(pf_sim_run(s, &st) == PF_OK, "the run failed");
    pf_progress_remove(p, slot);
    pf_progress_stop(p); /* a reporter that slept to its deadline would hang the test here */
    sink_close(k);
    CHECK(k->len == 0, "wrote before its first line's time: %s", k->text);
    fixture_free(&f);
}

/* More runs than slots: four named, the rest counted; the runs done
 * counted as they are removed. */
static void runs_past_the_slots_are_counted(void)
{
    enum { NRUNS = 70 };
    fixture f;
    if (fixture_open(&f, 10) != 0)
        return;
    pf_sim *s = f.s;
    sink *k = &f.k;
    pf_progress *p = pf_progress_start(k->wr, "t", NRUNS + 1, 0.2, 3600.0);
    int slot[NRUNS], unslotted = 0;
    for (int i = 0; i < NRUNS; i++) {
        slot[i] = pf_progress_add(p, s, i, i == 0 ? "naive" : "paged x=1");
        unslotted += slot[i] < 0;
    }
    pf_progress_remove(p, slot[NRUNS - 1]); /* one done before the first line */
    sink_drain(k, 5000);                   /* the line, at 200 ms */
    for (int i = 0; i < NRUNS - 1; i++)
        pf_progress_remove(p, slot[i]);
    pf_progress_stop(p);
    sink_close(k);

    CHECK(unslotted > 0, "every one of %d runs had a slot: the overflow is not tested", NRUNS);
    CHECK(count_lines(k->text) == 1, "one line expected:\n%s", k->text);
    CHECK(strncmp(k->text, "t: ", 3) == 0 && strstr(k->text, " naive 0 of 10 requests finished, step 0;"),
          "the first run not named first: %s", k->text);
    int named = 0;
    for (const char *c = k->text; (c = strstr(c, " requests finished")); c++)
        named++;
    CHECK(named == 4, "%d runs named, 4 expected: %s", named, k->text);
    char want[64];
    snprintf(want, sizeof want, "; %d more going (1 of %d runs done)\n", NRUNS - 1 - 4, NRUNS + 1);
    CHECK(strstr(k->text, want) != NULL, "no \"%s\" in %s", want, k->text);
    fixture_free(&f);
}

/* Runs registered last-first, with a tie and a freed slot reused: the
 * line names them by order, the tie by slot, whatever came first. */
static void runs_listed_by_order(void)
{
    fixture f;
    if (fixture_open(&f, 10) != 0)
        return;
    pf_sim *s = f.s;
    sink *k = &f.k;
    pf_progress *p = pf_progress_start(k->wr, "t", 6, 0.2, 3600.0);
    int gone = pf_progress_add(p, s, 9, "r9");  /* slot 0, freed below */
    int s5 = pf_progress_add(p, s, 5, "r5");    /* slot 1 */
    int s3a = pf_progress_add(p, s, 3, "r3a");  /* slot 2 */
    pf_progress_remove(p, gone);
    int s1 = pf_progress_add(p, s, 1, "r1");    /* slot 0 again */
    int s3b = pf_progress_add(p, s, 3, "r3b");  /* slot 3: after r3a */
    int s7 = pf_progress_add(p, s, 7, "r7");    /* slot 4: past the four named */
    sink_drain(k, 5000);
    int all[] = {s5, s3a, s1, s3b, s7};
    for (int i = 0; i < 5; i++)
        pf_progress_remove(p, all[i]);
    pf_progress_stop(p);
    sink_close(k);
    const char *want = " r1 0 of 10 requests finished, step 0; r3a 0 of 10 requests finished, step 0; r3b 0 of "
                       "10 requests finished, step 0; r5 0 of 10 requests finished, step 0; 1 more going (1 of "
                       "6 runs done)\n";
    CHECK(strstr(k->text, want) != NULL, "not in order:\n%s", k->text);
    fixture_free(&f);
}

/* NULL is "no reporting" everywhere. */
static void null_reporter(void)
{
    CHECK(pf_progress_add(NULL, NULL, 0, "x") == -1, "add to NULL gave a slot");
    pf_progress_remove(NULL, 0);
    pf_progress_stop(NULL);
}

int main(void)
{
    lines_follow_a_run();
    nothing_before_the_first_line();
    runs_past_the_slots_are_counted();
    runs_listed_by_order();
    null_reporter();
    if (failures)
        fprintf(stderr, "test_tui_progress: %d failures\n", failures);
    else
        printf("test_tui_progress: all passed\n");
    return failures ? 1 : 0;
}
