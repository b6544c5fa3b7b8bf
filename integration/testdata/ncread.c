/* ncread: read a hyperslab of a float variable with netCDF-C's
 * nc_get_vara_float, as C and Fortran models read their inputs, and
 * print it, one value a line (%.9g).
 *
 *   cc -O2 -o ncread ncread.c -lnetcdf
 *   ./ncread FILE VAR START COUNT     # START, COUNT: comma-separated
 *
 * It exits 1 on any netCDF error, saying which.
 */
#include <netcdf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *s, size_t *v, int max) {
	int n = 0;
	char *end;
	while (n < max && *s) {
		v[n++] = strtoul(s, &end, 10);
		s = *end == ',' ? end + 1 : end;
	}
	return n;
}

int main(int argc, char **argv) {
	int ncid, varid, ndims, err;
	size_t start[NC_MAX_VAR_DIMS], count[NC_MAX_VAR_DIMS], n = 1;
	if (argc != 5) {
		fprintf(stderr, "usage: ncread FILE VAR START COUNT\n");
		return 2;
	}
	if ((err = nc_open(argv[1], NC_NOWRITE, &ncid)) || (err = nc_inq_varid(ncid, argv[2], &varid)) ||
	    (err = nc_inq_varndims(ncid, varid, &ndims))) {
		fprintf(stderr, "ncread: %s\n", nc_strerror(err));
		return 1;
	}
	if (parse(argv[3], start, NC_MAX_VAR_DIMS) != ndims || parse(argv[4], count, NC_MAX_VAR_DIMS) != ndims) {
		fprintf(stderr, "ncread: %s has %d dimensions\n", argv[2], ndims);
		return 2;
	}
	for (int i = 0; i < ndims; i++)
		n *= count[i];
	float *v = malloc(n * sizeof *v);
	if (!v || (err = nc_get_vara_float(ncid, varid, start, count, v))) {
		fprintf(stderr, "ncread: %s\n", v ? nc_strerror(err) : "out of memory");
		return 1;
	}
	for (size_t i = 0; i < n; i++)
		printf("%.9g\n", v[i]);
	free(v);
	return nc_close(ncid) ? 1 : 0;
}
