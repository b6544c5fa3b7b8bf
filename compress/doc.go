// Package compress is the engine of zfuse compress: it plans what every
// array and group of a source becomes (NewPlan), checks the destination,
// and copies the plan into it, chunk by chunk, re-encoded. The command
// (cmd/zfuse) keeps the flags, the progress display and the summary.
//
// The one fact to know: the destination never describes data it lacks.
// Every value is written whole or not at all, and metadata only once the
// chunks it describes are written.
package compress
