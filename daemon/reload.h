/*
 * A reload (SIGHUP, tcpctl reload) and a key rotation (tcpctl keys
 * rotate), each answered to out (NULL: only the log).
 */
#ifndef DAEMON_RELOAD_H
#define DAEMON_RELOAD_H

#include <stdbool.h>
#include <stdio.h>

#include "daemon.h"

bool daemon_reload(struct daemon *d, FILE *out);
bool daemon_keys_rotate(struct daemon *d, FILE *out);

#endif
