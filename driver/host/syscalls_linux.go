package host

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// The mmap family is called through unix.Syscall6 rather than unix.Mmap because the driver works
// with addresses it chose itself (MAP_FIXED) and never hands the memory to Go as a slice; keeping
// addresses as uintptr also avoids unsafe.Pointer conversions of non-Go memory.

// mmap is the mmap system call; tests replace it to make the kernel's refusals happen on cue.
var mmap = func(addr uintptr, size uint64, prot, flags, fd int, offset uint64) (uintptr, error) {
	r, _, errno := unix.Syscall6(unix.SYS_MMAP, addr, uintptr(size), uintptr(prot), uintptr(flags),
		uintptr(fd), uintptr(offset))
	if errno != 0 {
		return 0, errno
	}
	return r, nil
}

// mapErr types the kernel's refusal of a mapping: ENOMEM (the mapping count, vm.max_map_count, or
// the address space is spent) becomes ErrMappingLimit, which wraps stitch.ErrOutOfMemory.
func mapErr(err error) error {
	if errors.Is(err, unix.ENOMEM) {
		return fmt.Errorf("%w: %w", ErrMappingLimit, err)
	}
	return err
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
			_ = munmap(raw, size+align) // whole, so nothing is left behind
			return 0, err
		}
	}
	if tail := align - uint64(base-raw); tail > 0 {
		if err := munmap(base+uintptr(size), tail); err != nil {
			_ = munmap(base, size)
			return 0, err
		}
	}
	return base, nil
}

// rereserve replaces whatever is mapped at [addr, addr+size) by a PROT_NONE reservation. At the
// mapping limit the kernel refuses any mmap, even one that would lower the count; munmap of whole
// mappings needs no new one, so then the mappings are unmapped first and the hole reserved again
// (the count is below the limit by then). Another thread could take the hole in between; the
// reservation then fails with the kernel's error instead of mapping over it (MAP_FIXED_NOREPLACE).
func rereserve(addr uintptr, size uint64) error {
	_, err := mmap(addr, size, unix.PROT_NONE, reserveFlags|unix.MAP_FIXED, -1, 0)
	if !errors.Is(err, unix.ENOMEM) {
		return err
	}
	if err := munmap(addr, size); err != nil {
		return err
	}
	if _, err := mmap(addr, size, unix.PROT_NONE, reserveFlags|unix.MAP_FIXED_NOREPLACE, -1, 0); err != nil {
		return fmt.Errorf("reserving the unmapped range again: %w", err)
	}
	return nil
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
