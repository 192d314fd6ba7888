#include "util/util.h"
