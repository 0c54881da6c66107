#ifndef STATUSD_CHIREDIS_SHIM_H
#define STATUSD_CHIREDIS_SHIM_H
#include <hiredis/hiredis.h>
#include <hiredis/read.h>
#endif
