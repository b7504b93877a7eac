/* tui/cells.c - the cell buffer (see cells.h). */
#include "tui/cells.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int pf_cells_resize(pf_cells *b, int w, int h)
{
    if (w < 1 || h < 1 || w > 10000 || h > 10000)
        return -1;
    pf_cell *c = malloc((size_t)w * (size_t)h * sizeof *c);
    if (!c)
        return -1;
    free(b->cells);
    b->cells = c;
    b->w = w;
    b->h = h;
    pf_cells_clear(b);
    return 0;
}

void pf_cells_free(pf_cells *b)
{
    free(b->cells);
    b->cells = NULL;
    b->w = b->h = 0;
}

void pf_cells_clear(pf_cells *b)
{
    size_t n = (size_t)b->w * (size_t)b->h;
    for (size_t i = 0; i < n; i++)
        b->cells[i] = (pf_cell){' ', PF_COL_DEFAULT, 0};
}

const pf_cell *pf_cells_at(const pf_cells *b, int x, int y)
{
    if (x < 0 || y < 0 || x >= b->w || y >= b->h)
        return NULL;
    return &b->cells[(size_t)y * (size_t)b->w + (size_t)x];
}

void pf_cells_put(pf_cells *b, int x, int y, uint32_t ch, uint8_t color, uint8_t attr)
{
    if (x < 0 || y < 0 || x >= b->w || y >= b->h)
        return;
    b->cells[(size_t)y * (size_t)b->w + (size_t)x] = (pf_cell){ch, color, attr};
}

void pf_cells_fill(pf_cells *b, int x, int y, int w, int h, uint32_t ch, uint8_t color,
                   uint8_t attr)
{
    for (int r = y; r < y + h; r++)
        for (int c = x; c < x + w; c++)
            pf_cells_put(b, c, r, ch, color, attr);
}

int pf_utf8_decode(const char *s, uint32_t *cp)
{
    const unsigned char *u = (const unsigned char *)s;
    if (!u[0]) {
        *cp = 0;
        return 0;
    }
    if (u[0] < 0x80) {
        *cp = u[0];
        return 1;
    }
    int n;
    uint32_t v;
    if ((u[0] & 0xE0) == 0xC0) {
        n = 2;
        v = u[0] & 0x1F;
    } else if ((u[0] & 0xF0) == 0xE0) {
        n = 3;
        v = u[0] & 0x0F;
    } else if ((u[0] & 0xF8) == 0xF0) {
        n = 4;
        v = u[0] & 0x07;
    } else {
        *cp = '?';
        return 1;
    }
    for (int i = 1; i < n; i++) {
        if ((u[i] & 0xC0) != 0x80) { /* also stops at the NUL */
            *cp = '?';
            return 1;
        }
        v = (v << 6) | (u[i] & 0x3F);
    }
    /* well-formed bytes that are still not UTF-8: an overlong form (it
     * hides '/' or ESC), a UTF-16 surrogate, or past U+10FFFF (the dump
     * would write them back out as invalid UTF-8) */
    static const uint32_t min_of[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < min_of[n] || (v >= 0xD800 && v <= 0xDFFF) || v > 0x10FFFF) {
        *cp = '?';
        return 1;
    }
    *cp = v;
    return n;
}

int pf_utf8_encode(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

int pf_cells_text(pf_cells *b, int x, int y, int maxw, uint8_t color, uint8_t attr,
                  const char *utf8)
{
    if (maxw < 0)
        maxw = b->w - x;
    int col = 0;
    const char *p = utf8;
    while (*p && col < maxw) {
        uint32_t cp;
        p += pf_utf8_decode(p, &cp);
        if (cp < 0x20 || (cp >= 0x7F && cp < 0xA0))
            cp = ' '; /* control characters (C0, DEL, C1) never reach the terminal */
        pf_cells_put(b, x + col, y, cp, color, attr);
        col++;
    }
    return col;
}

int pf_cells_printf(pf_cells *b, int x, int y, int maxw, uint8_t color, uint8_t attr,
                    const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    return pf_cells_text(b, x, y, maxw, color, attr, buf);
}

int pf_cells_row_text(const pf_cells *b, int y, char *out, size_t cap)
{
    if (!cap)
        return -1;
    out[0] = '\0';
    if (y < 0 || y >= b->h)
        return -1;
    size_t len = 0, keep = 0; /* keep: length up to the last non-blank */
    for (int x = 0; x < b->w; x++) {
        char enc[4];
        uint32_t ch = b->cells[(size_t)y * (size_t)b->w + (size_t)x].ch;
        int n = pf_utf8_encode(ch, enc);
        if (len + (size_t)n + 1 > cap) {
            out[keep < len ? keep : len] = '\0';
            return -1;
        }
        memcpy(out + len, enc, (size_t)n);
        len += (size_t)n;
        if (ch != ' ')
            keep = len;
    }
    out[keep] = '\0';
    return (int)keep;
}

int pf_cells_find(const pf_cells *b, const char *utf8, int *x, int *y)
{
    /* A naive scan per row, the needle decoded as it is compared: screens
     * are small, and a copy of it into a fixed array cut long needles
     * short (a false match). */
    if (!utf8[0])
        return 0;
    for (int r = 0; r < b->h; r++)
        for (int c = 0; c < b->w; c++) {
            const char *p = utf8;
            int i = 0, ok = 1;
            while (ok && *p) {
                uint32_t cp;
                p += pf_utf8_decode(p, &cp);
                ok = c + i < b->w && b->cells[(size_t)r * (size_t)b->w + (size_t)(c + i)].ch == cp;
                i++;
            }
            if (ok) {
                if (x)
                    *x = c;
                if (y)
                    *y = r;
                return 1;
            }
        }
    return 0;
}
