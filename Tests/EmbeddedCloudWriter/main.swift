// A second process for the embedded cloud's multi-process tests. It writes to a cloud file that
// the test process (and other writers) use at the same time:
//   EmbeddedCloudWriter <path> <zone> <writer-id> <own-records> <counter-increments>
// It creates <own-records> records of its own in requests of 50, and increments shared counter
// records by read-modify-replace, retrying on conflicts. It prints one summary line and exits 0,
// or prints the error and exits 1.
import EmbeddedCloud
import Foundation
import GatewayCore

let arguments = CommandLine.arguments
guard arguments.count == 6, let ownCount = Int(arguments[4]), let increments = Int(arguments[5]) else {
    FileHandle.standardError.write(Data("usage: EmbeddedCloudWriter <path> <zone> <writer-id> <own-records> <increments>\n".utf8))
    exit(2)
}
let zone = ZoneID(zoneName: arguments[2])
let writerID = arguments[3]
let counterNames = (0..<5).map { "counter-\($0)" }

func run() async throws -> (conflicts: Int, busy: Int) {
    let cloud = try EmbeddedCloud(path: arguments[1])
    try await cloud.createZone(zone)
    var conflicts = 0
    var busy = 0
    var created = 0
    while created < ownCount {
        let batch = (created..<min(created + 50, ownCount)).map { index in
            RecordOperation.create(
                Record(
                    id: RecordID(recordName: "\(writerID)-\(index)", zoneID: zone), recordType: "Item",
                    fields: ["writer": .string(writerID), "index": .int64(Int64(index))]))
        }
        do {
            let results = try await cloud.modify(batch, in: zone, atomic: true)
            if let error = results.compactMap(\.error).first { throw error }
            created += batch.count
        } catch let error as CloudError where error.code == .zoneBusy {
            busy += 1
        }
    }
    for step in 0..<increments {
        let id = RecordID(recordName: counterNames[step % counterNames.count], zoneID: zone)
        var current = try await cloud.lookup([id])[0]
        while true {
            var next = current ?? Record(id: id, recordType: "Counter", fields: ["count": .int64(0)])
            guard case .int64(let count) = next["count"] else { throw CloudError(.internalError, "counter lost its count") }
            next["count"] = .int64(count + 1)
            let operation: RecordOperation = current == nil ? .create(next) : .replace(next)
            let result = try await cloud.modify([operation], in: zone, atomic: true)[0]
            if case .failed(_, let error) = result {
                guard error.code == .serverRecordChanged else { throw error }
                conflicts += 1
                current = error.serverRecord
                continue
            }
            break
        }
    }
    return (conflicts, busy)
}

do {
    let outcome = try await run()
    print("writer \(writerID) done: conflicts=\(outcome.conflicts) busy=\(outcome.busy)")
    exit(0)
} catch {
    print("writer \(writerID) failed: \(error)")
    exit(1)
}
