/* npyread: read bytes of a .npy file's data with pread(2), as a C or
 * Fortran code that knows only flat binary files reads zfuse's .npy view.
 *
 * usage: npyread FILE OFFSET COUNT [OFFSET COUNT]...
 *
 * For each pair it prints in hex COUNT bytes of the array's data from byte
 * OFFSET (0 is the first element's first byte): one pread at the data's
 * start plus OFFSET. The data starts after the header, whose length the
 * file's first bytes give: NumPy format 1.0 has it in 2 bytes at offset 8,
 * formats 2.0 and 3.0 in 4 (little-endian); zfuse pads the header so that
 * the data starts at a multiple of 64. */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 4 || argc % 2) {
		fprintf(stderr, "usage: npyread FILE OFFSET COUNT [OFFSET COUNT]...\n");
		return 2;
	}
	int fd = open(argv[1], O_RDONLY);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	unsigned char h[12];
	if (pread(fd, h, sizeof h, 0) != sizeof h || memcmp(h, "\x93" "NUMPY", 6) != 0) {
		fprintf(stderr, "%s: not a .npy file\n", argv[1]);
		return 1;
	}
	off_t start = h[6] == 1 ? 10 + (h[8] | h[9] << 8)
	                        : 12 + (h[8] | h[9] << 8 | h[10] << 16 | (uint32_t)h[11] << 24);
	for (int i = 2; i + 1 < argc; i += 2) {
		off_t off = strtoll(argv[i], NULL, 10);
		size_t n = strtoull(argv[i + 1], NULL, 10);
		unsigned char *buf = malloc(n);
		ssize_t got = pread(fd, buf, n, start + off);
		if (got < 0) {
			perror("pread");
			return 1;
		}
		for (ssize_t k = 0; k < got; k++)
			printf("%02x", buf[k]);
		printf("\n");
		free(buf);
	}
	close(fd);
	return 0;
}
