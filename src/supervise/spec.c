#include "supervise/supervise.h"
