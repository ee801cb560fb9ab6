import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import TestScheduling
import Testing

/// Several processes on one cloud file at once: the embedded cloud must serialize their writes,
/// keep conditional writes honest across processes, and show every commit to every reader.
@Suite("Embedded cloud shared by several processes", .heavy)
struct MultiProcessTests {
    static let zone = ZoneID(zoneName: "Shared")

    @Test("two writer processes and a reading process converge with nothing lost")
    func twoWriterProcesses() async throws {
        let directory = try TemporaryDirectory(prefix: "embedded-multiprocess")
        defer { directory.remove() }
        let path = directory.path("cloud.sqlite")
        let cloud = try EmbeddedCloud(path: path)
        try await cloud.createZone(Self.zone)
        let ownRecords = 1_000
        let increments = 150
        let signals = cloud.changeSignals(in: Self.zone)
        let writer = try BuiltExecutable.path("EmbeddedCloudWriter")

        // The test process reads the feed while both writers commit.
        var replay: [String: String] = [:]
        var delivered = Set<String>()
        let signalled = LockedValue(false)
        let listening = LockedValue(false)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                var iterator = signals.makeAsyncIterator()
                await iterator.start()
                listening.set(true)
                if await iterator.next() != nil { signalled.set(true) }
            }
            // Signals report changes after the watch started, so the writers start only once the
            // reader is watching, however loaded the machine is.
            try await withTimeout(.seconds(60), "the reader starting to watch") {
                while !listening.get() { try await Task.sleep(for: .milliseconds(5)) }
            }
            let processes = try ["A", "B"].map { id in
                try Self.launch(writer, [path, Self.zone.zoneName, id, "\(ownRecords)", "\(increments)"], output: directory.path("writer-\(id).log"))
            }
            var token: ChangeToken?
            let deadline = ContinuousClock.now + .seconds(240)
            while true {
                let finished = processes.allSatisfy { !$0.process.isRunning }
                if ContinuousClock.now > deadline {
                    processes.forEach { $0.process.kill() }
                    throw ConformanceFailure("the writer processes did not finish within 240 s")
                }
                let page = try await cloud.fetchChanges(in: Self.zone, since: token, limit: 50)
                for record in page.modified {
                    let version = "\(record.id.recordName)#\(record.changeTag ?? "")"
                    #expect(delivered.insert(version).inserted, "delivered twice: \(version)")
                    replay[record.id.recordName] = record.changeTag
                }
                token = page.token
                if finished && !page.moreComing { break }
                if !page.moreComing { try await Task.sleep(for: .milliseconds(5)) }
            }
            for (process, output) in processes {
                let status = try await process.wait()
                let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
                #expect(status == 0, "writer failed: \(text)")
            }
            // The signal normally arrives long before the writers finish; the wait is bounded all the same.
            try? await withTimeout(.seconds(30), "the change signal") {
                while !signalled.get() { try await Task.sleep(for: .milliseconds(5)) }
            }
            group.cancelAll()
        }
        #expect(signalled.get(), "the reading process was signalled about the other processes' writes")

        let ownIDs = ["A", "B"].flatMap { writer in
            (0..<ownRecords).map { RecordID(recordName: "\(writer)-\($0)", zoneID: Self.zone) }
        }
        let own = try await cloud.lookup(ownIDs)
        #expect(own.compactMap { $0 }.count == ownIDs.count, "every record of both writers exists")
        let counterIDs = (0..<5).map { RecordID(recordName: "counter-\($0)", zoneID: Self.zone) }
        let counters = try await cloud.lookup(counterIDs)
        let total = counters.reduce(Int64(0)) { sum, record in
            guard case .int64(let count)? = record?["count"] else { return sum }
            return sum + count
        }
        #expect(total == Int64(2 * increments), "no increment was lost to a concurrent writer")
        for (id, record) in zip(ownIDs + counterIDs, own + counters) {
            #expect(replay[id.recordName] == record?.changeTag, "the feed replay matches \(id)")
        }
        #expect(replay.count == ownIDs.count + counterIDs.count, "the feed holds nothing else")
    }

    static func launch(_ executable: String, _ arguments: [String], output: String) throws -> (process: ChildProcess, output: String) {
        (try ChildProcess(executable, arguments: arguments, standardOutput: output, standardError: output), output)
    }
}
