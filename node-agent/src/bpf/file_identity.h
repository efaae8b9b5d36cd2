/* The file behind a mapping as the kernel sees it: shared by file_identity.bpf.c and the
 * loader (src/file_identity.rs). Fixed-width types only. */
#ifndef JVMDIAG_FILE_IDENTITY_H
#define JVMDIAG_FILE_IDENTITY_H

/* One record per mapping that starts at the requested address. `dev` is the kernel's
 * dev_t of the inode's super block (major in the high 12 bits, minor in the low 20). */
struct mapped_file {
	__u64 inode;
	__u32 dev;
	__u32 tgid;
};

/* The kernel's dev_t layout (include/linux/kdev_t.h: MINORBITS). */
#define KDEV_MINOR_BITS 20

#endif
