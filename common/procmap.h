/* SPDX-License-Identifier: MIT */
/* Linux 6.11's PROCMAP_QUERY ioctl on /proc/PID/maps (include/uapi/linux/fs.h; Debian 12's
 * headers predate it): the kernel's stable ABI, declared here when the headers lack it. Used by
 * the probe's unwinder (probe/sig/unwind_maps.c: the mapping holding a pc) and the injector
 * (injector/ptrace/procfs.c: the mappings of files with code). */
#ifndef PB_PROCMAP_H
#define PB_PROCMAP_H

#include <stdint.h>
#include <sys/ioctl.h>

#ifndef PROCMAP_QUERY
struct procmap_query {
    uint64_t size, query_flags, query_addr, vma_start, vma_end, vma_flags, vma_page_size,
        vma_offset, inode;
    uint32_t dev_major, dev_minor, vma_name_size, build_id_size;
    uint64_t vma_name_addr, build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READABLE 0x01
#define PROCMAP_QUERY_VMA_WRITABLE 0x02
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_VMA_SHARED 0x08
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#define PROCMAP_QUERY_FILE_BACKED_VMA 0x20
#endif

#endif
