// The declarations in include/mirror_codecs_testing.h are defined in CCodecs (jpeg.c, resample.c), where the internals
// they run are; a C target needs one file of its own.
#include "mirror_codecs_testing.h"

typedef int mirror_codecs_testing_declarations_only;
