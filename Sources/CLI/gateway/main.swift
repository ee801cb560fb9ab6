import GatewayCLI

// The command line with the kinds this package ships; see GatewayCLI for custom builds.
await GatewayCLI.main()
