#ifndef WD_SUPERVISE_H
#define WD_SUPERVISE_H
#include "util/util.h"
#endif
