// The reliability harness: `crash` kills `gateway sync` at random moments and proves nothing is
// lost or duplicated; `converge` runs three gateway processes against one cloud with injected
// faults and concurrent writers, then proves every store and the cloud agree. Any other first
// argument runs the gateway command line itself, with one more cloud kind (`faulty-embedded`,
// the embedded cloud behind FaultInjectingCloud), which `converge` uses for its gateways.
// `faults` makes the world fail around running gateways: servers die, networks drop, disks
// fill, clocks jump; `soak` runs gateways for minutes under steady writes; `history` checks random
// histories of writes, restores, replaced stores and schema changes for anomalies by class.
//
//   swift run -c release gateway-harness crash --records 50000 --kills 30
//   swift run -c release gateway-harness converge
//   swift run -c release gateway-harness faults --faults 20
//   swift run -c release gateway-harness history --seeds 10000
import Foundation
import GatewayCLI
import GatewayKinds
import GatewayConfig
import SQLiteSupport

// As `gateway` runs: SQLite's process-wide settings before any connection opens.
SQLiteProcessSettings.apply()
let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "crash", "converge", "faults", "soak", "history", "--help", "-h", nil:
    await HarnessCommand.runHarness(arguments)
default:
    var registry = GatewayRegistry.builtIn
    registry.register(FaultyCloudKind())
    await GatewayCLI.main(registry: registry)
}
