/* tui/dash_keys.c - the dashboard's pure helpers (see dash.h): the key map,
 * the watermark and worker steps, the text dump. Kept apart from dash.c so
 * tests and benchmarks link them without the simulator or curses. */
#include <math.h>
#include <stdio.h>

#include "tui/dash.h"
#include "tui/term.h" /* the key codes only: no curses here */

pf_dash_cmd pf_dash_key(int key)
{
    switch (key) {
    case 'w':
        return PF_DASH_CMD_WATERMARK_DOWN;
    case 'W':
        return PF_DASH_CMD_WATERMARK_UP;
    case '-':
    case '_':
    case '[':
        return PF_DASH_CMD_WORKERS_DOWN;
    case '+':
    case '=':
    case ']':
        return PF_DASH_CMD_WORKERS_UP;
    case 'v':
    case 'V':
        return PF_DASH_CMD_POLICY_NEXT;
    case 'p':
    case 'P':
        return PF_DASH_CMD_PREEMPT_NEXT;
    case 'm':
    case 'M':
        return PF_DASH_CMD_MODE_TOGGLE;
    case ' ':
        return PF_DASH_CMD_PAUSE_TOGGLE;
    case 's':
    case 'S':
    case '.':
        return PF_DASH_CMD_STEP;
    case 'f':
        return PF_DASH_CMD_SLOWER;
    case 'F':
        return PF_DASH_CMD_FASTER;
    case 'r':
    case 'R':
        return PF_DASH_CMD_RESET;
    case 'g':
    case 'G':
        return PF_DASH_CMD_GPU;
    case '?':
    case 'h':
    case PF_TERM_KEY_F1:
        return PF_DASH_CMD_HELP;
    case 'q':
    case 'Q':
    case PF_TERM_KEY_F10:
        return PF_DASH_CMD_QUIT;
    case 'c':
    case 'C':
        return PF_DASH_CMD_COLORING;
    case PF_TERM_KEY_ESC:
        return PF_DASH_CMD_CLOSE;
    case PF_TERM_KEY_UP:
        return PF_DASH_CMD_CURSOR_UP;
    case PF_TERM_KEY_DOWN:
        return PF_DASH_CMD_CURSOR_DOWN;
    case PF_TERM_KEY_LEFT:
        return PF_DASH_CMD_CURSOR_LEFT;
    case PF_TERM_KEY_RIGHT:
        return PF_DASH_CMD_CURSOR_RIGHT;
    case 'i':
    case 'I':
        return PF_DASH_CMD_INSPECT;
    case '\t':
        return PF_DASH_CMD_HELP_NEXT;
    case 't':
    case 'T':
        return PF_DASH_CMD_CHARTS;
    case '<':
        return PF_DASH_CMD_ZOOM_IN;
    case '>':
        return PF_DASH_CMD_ZOOM_OUT;
    case '2':
        return PF_DASH_CMD_SPLIT;
    case 'x':
    case 'X':
        return PF_DASH_CMD_SWEEP;
    case 'a':
    case 'A':
        return PF_DASH_CMD_WATERMARK_AUTO;
    default:
        return PF_DASH_CMD_NONE;
    }
}

double pf_dash_watermark_step(double w, int up)
{
    /* work in whole percent to avoid drifting sums of 0.01 */
    double pct = w * 100.0;
    double step = up ? (pct < 10.0 - 1e-9 ? 1.0 : 5.0) : (pct <= 10.0 + 1e-9 ? 1.0 : 5.0);
    double next = up ? floor(pct / step + 1e-9) * step + step : ceil(pct / step - 1e-9) * step - step;
    if (next < 0)
        next = 0;
    if (next > 100)
        next = 100;
    return next / 100.0;
}

int pf_dash_workers_step(int workers, int up)
{
    /* going down, the step of the range below: 256 - 16 = 240, not 192 */
    int w = up ? workers : workers - 1;
    int step = w < 16 ? 1 : w < 64 ? 4 : w < 256 ? 16 : 64;
    int next = up ? workers + step : workers - step;
    return next < 1 ? 1 : next > PF_SIM_MAX_SEQS ? PF_SIM_MAX_SEQS : next;
}

void pf_dash_dump(FILE *f, const pf_cells *b)
{
    char line[8 * 1024];
    for (int y = 0; y < b->h; y++) {
        pf_cells_row_text(b, y, line, sizeof line);
        fputs(line, f);
        fputc('\n', f);
    }
}


int pf_dash_cursor_move(int cursor, pf_dash_cmd cmd, int cells, int w)
{
    if (cells < 1 || w < 1)
        return -1;
    if (cursor < 0 || cursor >= cells)
        return cells / 2;
    int c = cursor;
    switch (cmd) {
    case PF_DASH_CMD_CURSOR_LEFT:
        c--;
        break;
    case PF_DASH_CMD_CURSOR_RIGHT:
        c++;
        break;
    case PF_DASH_CMD_CURSOR_UP:
        c = c - w >= 0 ? c - w : c;
        break;
    case PF_DASH_CMD_CURSOR_DOWN:
        c = c + w < cells ? c + w : c;
        break;
    default:
        break;
    }
    return c < 0 ? 0 : c >= cells ? cells - 1 : c;
}
