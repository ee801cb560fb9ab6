import GatewayCLI
import GatewayKinds
import GatewayConfig

// Every `gateway` command, with one more adapter kind registered.
var registry = GatewayRegistry.builtIn
registry.register(RecordsFileKind())
await GatewayCLI.main(registry: registry)
