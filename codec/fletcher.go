package codec

// fletcher32 is the HDF5/netCDF Fletcher-32 (H5_checksum_fletcher32, as
// numcodecs' fletcher32 computes it): 16-bit words read big-endian, sums
// folded every 360 words, an odd last byte added as the high byte, two
// final folds. It is not the textbook Fletcher-32.
func fletcher32(data []byte) uint32 {
	var sum1, sum2 uint32
	words := len(data) / 2
	for words > 0 {
		n := min(words, 360)
		words -= n
		for range n {
			sum1 += uint32(data[0])<<8 | uint32(data[1])
			sum2 += sum1
			data = data[2:]
		}
		sum1 = sum1&0xffff + sum1>>16
		sum2 = sum2&0xffff + sum2>>16
	}
	if len(data) == 1 {
		sum1 += uint32(data[0]) << 8
		sum2 += sum1
		sum1 = sum1&0xffff + sum1>>16
		sum2 = sum2&0xffff + sum2>>16
	}
	sum1 = sum1&0xffff + sum1>>16
	sum2 = sum2&0xffff + sum2>>16
	return sum2<<16 | sum1
}
