package functions

// For the tests of package functions_test.
var (
	ExportMetrics = exportMetrics
	ExportGap     = exportGap
)
