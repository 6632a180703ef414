/*
 * What the fuzz targets share (tests/fuzz/README): libFuzzer's entry point
 * and an abort that names the broken promise, so that a finding reads as
 * a bug report and not only as a stack.
 */
#ifndef TESTS_FUZZ_FUZZ_H
#define TESTS_FUZZ_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_ASSERT(cond)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "%s:%d: broken: %s\n", __FILE__,	\
				__LINE__, #cond);			\
			abort();					\
		}							\
	} while (0)

#endif
