/* core/err.h - error codes shared by every PageFault module.
 *
 * Contract: functions that can fail return 0 (PF_OK) or a negative pf_err.
 * Nothing in the library aborts on bad input; callers turn the code into a
 * message with pf_strerror() and decide what to do. Used by every layer.
 */
#ifndef PF_CORE_ERR_H
#define PF_CORE_ERR_H

typedef enum {
    PF_OK = 0,
    PF_ERR_NOMEM = -1,       /* no free frame (or host allocation failed) */
    PF_ERR_DOUBLE_FREE = -2, /* freeing a frame that is already free */
    PF_ERR_NOT_OWNER = -3,   /* freeing a frame owned by somebody else */
    PF_ERR_RANGE = -4,       /* frame id or size out of range */
    PF_ERR_ARG = -5,         /* invalid argument (NULL, negative count...) */
    PF_ERR_WATERMARK = -6,   /* admission refused: would dip into the reserve */
    PF_ERR_IO = -7,          /* file could not be read / malformed */
    PF_ERR_UNAVAILABLE = -8  /* feature not built in or no device */
} pf_err;

/* Human-readable, static string for a pf_err (never NULL). */
const char *pf_strerror(int err);

/* Text that a message quotes from outside (a flag's value, a file's field)
 * made safe to print, in place: each control byte (below 0x20, or DEL)
 * becomes '?', so the message stays one line and an escape sequence in the
 * input does not drive the terminal. Returns s. Callers: tui/cli.c's usage
 * errors, sim/jobs.c's trace messages. */
char *pf_err_visible(char *s);

#endif
