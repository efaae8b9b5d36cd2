// SPDX-License-Identifier: GPL-2.0
/* Names the file behind one mapping of a process as the kernel sees it: the inode of
 * vma->vm_file. Under overlayfs (and any stacking filesystem) /proc/PID/maps shows the
 * overlay's device and inode, one per container, while the mapping's vm_file is the real
 * file underneath — the very inode a uprobe is placed on (uprobes key on the inode that
 * d_real_inode() returns for the attach path). Grouping JVMs by this identity attaches each
 * real libjvm.so once, however many containers map it through their own mounts.
 *
 * A task_vma iterator created for one process (link info task.pid); the loader sets
 * `target_start` and reads the records with read(2). */
/* Unlike the collectors this object reads kernel structs, so it keeps CO-RE relocations
 * (build.rs compiles every object with BPF_NO_PRESERVE_ACCESS_INDEX). */
#undef BPF_NO_PRESERVE_ACCESS_INDEX
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include "file_identity.h"

char LICENSE[] SEC("license") = "GPL";

/* Start address of the mapping to name (set by the loader before each read). */
__u64 target_start = 0;
/* The record's shape, in the object's BTF for the loader's generated types. */
struct mapped_file last_record = {};

SEC("iter/task_vma")
int mapped_file_identity(struct bpf_iter__task_vma *ctx)
{
	struct vm_area_struct *vma = ctx->vma;
	struct task_struct *task = ctx->task;
	struct mapped_file rec = {};
	struct file *file;
	struct inode *inode;

	if (!vma || !task || vma->vm_start != target_start)
		return 0;
	file = vma->vm_file;
	if (!file)
		return 0;
	inode = file->f_inode;
	if (!inode)
		return 0;
	rec.inode = inode->i_ino;
	rec.dev = inode->i_sb->s_dev;
	rec.tgid = task->tgid;
	last_record = rec;
	bpf_seq_write(ctx->meta->seq, &rec, sizeof(rec));
	return 0;
}
