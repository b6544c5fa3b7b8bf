package readahead

// arrayTables returns how many arrays the Loader holds batch decoders
// for; how many name orders it keeps, and their bytes; and how many it
// has computed.
func (l *Loader) arrayTables() (decoders, orders int, orderBytes, computed int64) {
	decoders = int(l.routes.len())
	st := l.readers.orders.Stats()
	return decoders, int(st.Items), st.Used, st.Loads
}
