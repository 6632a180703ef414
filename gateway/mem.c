#include "mem.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

void *
mem_resident(size_t n, size_t size)
{
	volatile uint8_t *p;
	long page = sysconf(_SC_PAGESIZE);
	size_t len, off, step = page > 0 ? (size_t)page : 4096;

	if (size && n > SIZE_MAX / size) {
		errno = ENOMEM;
		return NULL;
	}
	len = n * size;
	if (len == 0)
		len = 1;
	/* calloc's fresh pages are shared zero pages until written; a
	 * volatile store per page makes each one the process's own. */
	p = calloc(1, len);
	if (!p)
		return NULL;
	for (off = 0; off < len; off += step)
		p[off] = 0;
	return (void *)p;
}
