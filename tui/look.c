/* tui/look.c - the look flags shared by the dashboard and replay (look.h). */
#include "tui/look.h"

#include <langinfo.h>
#include <locale.h>
#include <stdlib.h>
#include <string.h>

void pf_look_default(pf_dash_look *l)
{
    memset(l, 0, sizeof *l);
    l->window = PF_CHART_DEFAULT_WINDOW_S;
}

void pf_look_opts(pf_dash_look *l, pf_opt *rows)
{
    const pf_opt r[PF_LOOK_NOPTS] = {
        {"ascii", PF_OPT_FLAG, &l->ascii, 0, 0, NULL, NULL, "ASCII glyphs instead of UTF-8", 0},
        {"no-color", PF_OPT_FLAG, &l->no_color, 0, 0, NULL, NULL, "no colours (also when NO_COLOR is set)", 0},
        {"coloring", PF_OPT_CHOICE, &l->coloring, 0, 0, pf_coloring_names, "C",
         "what the grid's colour means: owner, state or age (key c cycles)", 0},
        {"charts", PF_OPT_FLAG, &l->charts, 0, 0, NULL, NULL, "start with the charts (key t)", 0},
        {"window", PF_OPT_DOUBLE, &l->window, PF_CHART_MIN_WINDOW_S, PF_CHART_MAX_WINDOW_S, NULL, "SECONDS",
         "chart window in simulated seconds (keys < >)", 0},
    };
    memcpy(rows, r, sizeof r);
}

void pf_look_settle(pf_dash_look *l)
{
    const char *nc = getenv("NO_COLOR");
    if (nc && nc[0])
        l->no_color = 1;
    /* the locale's character set decides whether the terminal takes UTF-8
     * (ncursesw reads it too). LC_CTYPE only: with LC_ALL, LC_NUMERIC came
     * along, and under de_DE the headless JSON and summary, and the
     * /metrics page, wrote 0,5 for 0.5 */
    setlocale(LC_CTYPE, "");
    if (l->ascii)
        return;
    const char *cs = nl_langinfo(CODESET);
    l->ascii = !(cs && (!strcmp(cs, "UTF-8") || !strcmp(cs, "utf8") || !strcmp(cs, "UTF8")));
}

void pf_look_view(const pf_dash_look *l, pf_dash_view *v)
{
    v->ascii = l->ascii;
    v->no_color = l->no_color;
    v->coloring = l->coloring;
    v->charts = l->charts;
    v->window_s = l->window;
}
