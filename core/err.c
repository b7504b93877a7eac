/* core/err.c - messages for pf_err codes (see err.h). Static strings only,
 * so callers may print them from anywhere, signal handlers excepted. */
#include "core/err.h"

const char *pf_strerror(int err)
{
    switch (err) {
    case PF_OK:
        return "success";
    case PF_ERR_NOMEM:
        return "out of memory: no free frame in the pool";
    case PF_ERR_DOUBLE_FREE:
        return "double free: the frame is already free";
    case PF_ERR_NOT_OWNER:
        return "not the owner: the frame belongs to another sequence";
    case PF_ERR_RANGE:
        return "out of range";
    case PF_ERR_ARG:
        return "invalid argument";
    case PF_ERR_WATERMARK:
        return "admission refused: the watermark reserve would be touched";
    case PF_ERR_IO:
        return "input could not be read or is malformed";
    case PF_ERR_UNAVAILABLE:
        return "unavailable: feature not built in or no device";
    default:
        return "unknown error";
    }
}

char *pf_err_visible(char *s)
{
    for (char *c = s; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    return s;
}
