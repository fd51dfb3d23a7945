package host

import "golang.org/x/sys/unix"

// The mmap family is called through unix.Syscall6 rather than unix.Mmap because the driver works
// with addresses it chose itself (MAP_FIXED) and never hands the memory to Go as a slice; keeping
// addresses as uintptr also avoids unsafe.Pointer conversions of non-Go memory.

func mmap(addr uintptr, size uint64, prot, flags, fd int, offset uint64) (uintptr, error) {
	r, _, errno := unix.Syscall6(unix.SYS_MMAP, addr, uintptr(size), uintptr(prot), uintptr(flags),
		uintptr(fd), uintptr(offset))
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

func munmap(addr uintptr, size uint64) error {
	if _, _, errno := unix.Syscall(unix.SYS_MUNMAP, addr, uintptr(size), 0); errno != 0 {
		return errno
	}
	return nil
}

func mprotect(addr uintptr, size uint64, prot int) error {
	if _, _, errno := unix.Syscall(unix.SYS_MPROTECT, addr, uintptr(size), uintptr(prot)); errno != 0 {
		return errno
	}
	return nil
}

const reserveFlags = unix.MAP_PRIVATE | unix.MAP_ANONYMOUS | unix.MAP_NORESERVE

// reserve returns size bytes of PROT_NONE address space aligned to align, by over-reserving and
// trimming the excess on both sides.
func reserve(size, align uint64) (uintptr, error) {
	raw, err := mmap(0, size+align, unix.PROT_NONE, reserveFlags, -1, 0)
	if err != nil {
		return 0, err
	}
	base := (raw + uintptr(align) - 1) &^ (uintptr(align) - 1)
	if head := uint64(base - raw); head > 0 {
		if err := munmap(raw, head); err != nil {
			return 0, err
		}
	}
	if tail := align - uint64(base-raw); tail > 0 {
		if err := munmap(base+uintptr(size), tail); err != nil {
			return 0, err
		}
	}
	return base, nil
}

// rereserve replaces whatever is mapped at [addr, addr+size) by a PROT_NONE reservation.
func rereserve(addr uintptr, size uint64) error {
	_, err := mmap(addr, size, unix.PROT_NONE, reserveFlags|unix.MAP_FIXED, -1, 0)
	return err
}

// mapShared maps [offset, offset+size) of file fd at addr, replacing the reservation there.
func mapShared(addr uintptr, size uint64, fd int, offset uint64, prot int) error {
	_, err := mmap(addr, size, prot, unix.MAP_SHARED|unix.MAP_FIXED, fd, offset)
	return err
}

// punchHole gives [offset, offset+size) of fd back to the kernel, keeping the file size.
func punchHole(fd int, offset, size uint64) error {
	return unix.Fallocate(fd, unix.FALLOC_FL_PUNCH_HOLE|unix.FALLOC_FL_KEEP_SIZE, int64(offset), int64(size))
}

// physicalRAM is the machine's total RAM in bytes.
func physicalRAM() (uint64, error) {
	var info unix.Sysinfo_t
	if err := unix.Sysinfo(&info); err != nil {
		return 0, err
	}
	return uint64(info.Totalram) * uint64(info.Unit), nil
}
