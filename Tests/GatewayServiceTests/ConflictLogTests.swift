import GatewayCore
import Logging
import Synchronization
import Testing

@testable import GatewayService

/// Captures what a logger logs, message and metadata, for the assertions.
final class CapturedLog: Sendable {
    let lines = Mutex<[(message: String, metadata: Logger.Metadata)]>([])

    var logger: Logger {
        Logger(label: "captured") { _ in CapturingHandler(log: self) }
    }

    struct CapturingHandler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            log.lines.withLock { $0.append((event.message.description, metadata.merging(event.metadata ?? [:]) { $1 })) }
        }
    }
}

@Suite("Conflict log")
struct ConflictLogTests {
    @Test("each conflict of a pass is named with its record, policy and resolution, up to the cap; a new pass names again")
    func namesConflicts() {
        let captured = CapturedLog()
        let log = ConflictLog(logger: captured.logger)
        let zone = ZoneID(zoneName: "Z")
        func conflict(_ index: Int) -> SyncEvent {
            .conflict(adapter: "a", recordID: RecordID(recordName: "r\(index)", zoneID: zone), policy: .merge, resolution: .serverWon)
        }
        log.observe(.adapterStarted(adapter: "a"))
        for index in 0..<(ConflictLog.perPass + 20) { log.observe(conflict(index)) }
        let lines = captured.lines.withLock { $0 }
        let named = lines.filter { $0.message == "conflict" }
        #expect(named.count == ConflictLog.perPass)
        #expect(named.first?.metadata["record"] == "r0")
        #expect(named.first?.metadata["policy"] == "merge" && named.first?.metadata["resolution"] == "serverWon")
        #expect(lines.filter { $0.message.contains("counted, not named") }.count == 1)

        log.observe(.adapterStarted(adapter: "a"))
        log.observe(conflict(999))
        #expect(captured.lines.withLock { $0 }.last?.metadata["record"] == "r999", "a new pass names its conflicts again")
    }
}
