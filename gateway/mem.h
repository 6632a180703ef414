/*
 * Tables sized at start and made resident at once.  The packet path never
 * allocates; it should not take a page fault to grow either, and the
 * daemon's resident size should be the bound the operator configured from
 * the first second, not a record of the worst load seen so far.
 */
#ifndef GATEWAY_MEM_H
#define GATEWAY_MEM_H

#include <stddef.h>

/* n zeroed elements of size bytes, every page touched; NULL (ENOMEM) on
 * overflow or exhaustion.  Released with free(). */
void	*mem_resident(size_t n, size_t size);

#endif
