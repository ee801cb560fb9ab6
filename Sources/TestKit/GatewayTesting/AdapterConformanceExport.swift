// The conformance suites' shared vocabulary (`ConformanceCase`, `ConformanceFailure`, the
// expectation helpers) and the adapter suite live in AdapterConformance, which the shipped
// gateway links for `check-adapter`; the gateway's own tests reach them through this module.
@_exported import AdapterConformance
