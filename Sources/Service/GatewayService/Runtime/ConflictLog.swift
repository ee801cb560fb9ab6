import GatewayCore
import Logging
import Synchronization

/// Names each conflict a sync resolves in the service log (`conflict`, with the record, the
/// policy and the resolution), so an operator can find the record whose local edit lost. At most
/// ``perPass`` lines per adapter pass: a restored store joining the zone can meet a conflict per
/// record, and the rest are counted in the pass's summary line and in `/metrics`.
final class ConflictLog: Sendable {
    /// How many conflicts one adapter pass names.
    static let perPass = 100

    private let logger: Logger
    private let logged = Mutex<[String: Int]>([:])

    init(logger: Logger) {
        self.logger = logger
    }

    /// The synchronizer's observer: logs conflicts, and counts them per pass.
    func observe(_ event: SyncEvent) {
        switch event {
        case .adapterStarted(let adapter):
            logged.withLock { $0[adapter] = 0 }
        case .conflict(let adapter, let recordID, let policy, let resolution):
            let count = logged.withLock { counts in
                counts[adapter, default: 0] += 1
                return counts[adapter]!
            }
            if count <= Self.perPass {
                logger.info(
                    "conflict", metadata: ["adapter": "\(adapter)", "record": "\(recordID.recordName)", "policy": "\(policy.rawValue)", "resolution": "\(resolution.rawValue)"])
            }
            if count == Self.perPass {
                logger.info("further conflicts of this pass are counted, not named", metadata: ["adapter": "\(adapter)"])
            }
        default:
            break
        }
    }
}
