#ifndef MIRROR_CARCHIVE_SHIM_H
#define MIRROR_CARCHIVE_SHIM_H
// libarchive (Debian libarchive-dev), for writing WebDataset tar shards. Its API has no variadic calls, so Swift
// calls it directly; this header only gathers what it needs.
#include <archive.h>
#include <archive_entry.h>
#endif
