/*
 * A POSIX ACL that lets one more user read a file, as the kernel takes it
 * in the system.posix_acl_access extended attribute (posix_acl_xattr,
 * version 2, then (tag, perm, id) entries, little-endian, in tag order):
 * user::rw- user:65534:r-- group::--- mask::r-- other::---.  The secret
 * loader must refuse a file that has it, whatever its mode bits say
 * (tests/unit/test_keys.c, tests/fuzz/fuzz_keys.c).
 */
#ifndef TESTS_ACL_H
#define TESTS_ACL_H

#include <stdint.h>

#define TEST_ACL_XATTR	"system.posix_acl_access"

static const uint8_t test_acl_one_more_reader[] = {
	2, 0, 0, 0,
	0x01, 0, 6, 0, 0xff, 0xff, 0xff, 0xff,
	0x02, 0, 4, 0, 0xfe, 0xff, 0, 0,
	0x04, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
	0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
	0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff,
};

#endif
