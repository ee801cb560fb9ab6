import EmbeddedCloud
import Foundation
import GRDB
import GatewayCore
import GatewayTesting

#if canImport(Glibc)
import Glibc
#endif

/// Disks that fill and turn read-only: `state_dir` (with the embedded cloud), a SQLite store and
/// a folder of JSON documents live on a small tmpfs. During syncs a filler file takes the last
/// byte of it; the sync must fail with an error naming the path, nothing may be corrupted, and
/// once the filler is gone the next sync must complete. Then the filesystem is remounted
/// read-only: a clear error again, and nothing lost when it is writable again.
///
/// Mounting needs root (CI runs as root); otherwise the scenario fails saying so.
struct DiskFaults {
    let root: URL
    let gateway: String
    let seed: UInt64

    func run(faults: Int, preload: Int) async throws -> ScenarioResult {
        var scenario = try ServiceScenario(name: "disk", root: root)
        let folder = scenario.folder
        guard geteuid() == 0 else {
            throw HarnessFailure("the disk scenario mounts a small tmpfs and needs root; run it as root (CI does), or leave it out with --scenario")
        }
        let disk = folder.path("disk")
        try FileManager.default.createDirectory(atPath: disk, withIntermediateDirectories: true)
        try await Self.command("/bin/mount", ["-t", "tmpfs", "-o", "size=12m", "tmpfs", disk])
        do {
            let result = try await run(scenario: &scenario, disk: disk, faults: faults, preload: preload)
            try await Self.command("/bin/umount", [disk])
            return result
        } catch {
            try? await Self.command("/bin/umount", ["-l", disk])
            throw error
        }
    }

    private func run(scenario: inout ServiceScenario, disk: String, faults: Int, preload: Int) async throws -> ScenarioResult {
        let folder = scenario.folder
        let store = try SQLiteItems.create(at: "\(disk)/app.sqlite", rows: preloadRows("s", count: preload, seed: seed))
        try FileManager.default.createDirectory(atPath: "\(disk)/docs/Doc", withIntermediateDirectories: true)
        var docs: [String: String] = [:]
        try folder.write(
            "config.yaml",
            """
            gateway: { state_dir: disk/state, retry: { max_attempts: 2, base_delay: 50ms, max_delay: 200ms } }
            cloud: { kind: embedded }
            adapters:
              - { name: app, kind: sqlite, path: disk/app.sqlite, zone: Items, busy_timeout: 5s, tables: [{ table: items, record_type: Item }] }
              - { name: docs, kind: json, directory: disk/docs, zone: Docs }
            """)
        var random = SeededGenerator(seed: seed)
        var next = 0
        /// Adds rows and documents, as the programs that own them would.
        func write(_ count: Int) async throws {
            for _ in 0..<count {
                let id = "s-\(next)"
                try await store.put(id, title: "row \(next)", n: Int64(next))
                let name = "doc-\(next % 97)"
                let text = "{\"title\": \"doc \(next)\", \"n\": \(next)}"
                try Data(text.utf8).write(to: URL(fileURLWithPath: "\(disk)/docs/Doc/\(name).json"), options: .atomic)
                docs[name] = "doc \(next)|\(next)"
                next += 1
            }
        }
        try await write(200)
        var failuresNamed = 0
        var failures = 0
        var messages: [String] = []
        for round in 0..<faults {
            try await write(Int.random(in: 200...800, using: &random))
            // Most of the space goes first; the last of it while the sync runs.
            try Self.fill(disk, leaving: Int.random(in: 16...256, using: &random) * 1024)
            let sync = try ChildProcess(
                gateway, arguments: ["sync", "--config", "config.yaml", "--progress", "none"], directory: folder.url.path,
                standardOutput: folder.path("fill-\(round).out"), standardError: folder.path("fill-\(round).err"))
            try await Task.sleep(for: random.pause(0...0.2))
            try Self.fill(disk, leaving: 0)
            scenario.count("disk full during a sync")
            let status = try await sync.wait(timeout: .seconds(120))
            // The summary on standard output names each failed adapter's error.
            let errors = ["out", "err"].map { (try? String(contentsOfFile: folder.path("fill-\(round).\($0)"), encoding: .utf8)) ?? "" }.joined()
            if status != 0 {
                failures += 1
                let names = errors.contains(disk) && (errors.contains("full") || errors.contains("No space left"))
                if names { failuresNamed += 1 } else { messages.append("round \(round): exit \(status): \(errors.suffix(400))") }
            }
            // Checked with the space back: SQLite's read-only opens of a WAL file need a little of it.
            try FileManager.default.removeItem(atPath: "\(disk)/filler")
            try Self.checkIntegrity(disk: disk)
            let again = try await Self.sync(gateway: gateway, in: folder, name: "after-\(round)")
            if again.status != 0 { messages.append("round \(round): the sync after freeing space exited \(again.status): \(again.errors.suffix(400))") }
        }

        // Read-only: the same files, on a filesystem remounted read-only.
        try await write(100)
        try await Self.command("/bin/mount", ["-o", "remount,ro", disk])
        scenario.count("filesystem remounted read-only")
        let readOnly = try await Self.sync(gateway: gateway, in: folder, name: "read-only")
        try await Self.command("/bin/mount", ["-o", "remount,rw", disk])
        let readOnlyNamed = readOnly.status != 0 && readOnly.errors.contains(disk) && readOnly.errors.lowercased().contains("read-only")
        let final = try await Self.sync(gateway: gateway, in: folder, name: "final")

        scenario.checks["every sync that failed on the full disk named the path and said it was full"] =
            failuresNamed == failures ? "ok (\(failures) of \(faults) syncs failed, each naming the path)" : "FAILED: \(messages.joined(separator: "; "))"
        scenario.checks["every sync after space was freed completed"] =
            messages.allSatisfy { !$0.contains("after freeing") } ? "ok" : "FAILED: \(messages.filter { $0.contains("after freeing") }.joined(separator: "; "))"
        scenario.checks["a read-only filesystem gives an error naming the path"] =
            readOnlyNamed ? "ok (exit \(readOnly.status))" : "FAILED: exit \(readOnly.status): \(readOnly.errors.suffix(600))"
        scenario.checks["the sync on the writable filesystem again completed"] = final.status == 0 ? "ok" : "FAILED: \(final.errors.suffix(400))"

        let expectedRows = try await store.lines()
        let expectedDocs = docs
        let cloudPath = "\(disk)/state/cloud.sqlite"
        scenario.preloaded = expectedRows
        var result = try await scenario.finish(sides: [
            ("app", { try await store.lines() }),
            ("cloud", { try await FaultZone.lines(inEmbedded: cloudPath) }),
        ], settleTimeout: .seconds(5))
        let docsInCloud = try await Self.documents(inEmbedded: cloudPath)
        let docComparison = SideComparison(side: "cloud (Docs)", lines: docsInCloud, expected: expectedDocs)
        result.sides.append(docComparison)
        result.lost = max(result.lost, docComparison.lost)
        result.duplicated = max(result.duplicated, docComparison.duplicated)
        return result
    }

    /// Grows the file `filler` on the filesystem of `disk` until only `slack` bytes are free.
    static func fill(_ disk: String, leaving slack: Int) throws {
        let descriptor = open("\(disk)/filler", O_WRONLY | O_CREAT | O_APPEND, 0o644)
        guard descriptor >= 0 else { throw HarnessFailure("cannot open the filler file: \(String(cString: strerror(errno)))") }
        defer { close(descriptor) }
        let chunk = [UInt8](repeating: 0, count: 16 * 1024)
        while free(disk) > slack {
            let size = min(chunk.count, max(1, free(disk) - slack))
            let written = chunk.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, size) }
            if written <= 0 { break }
        }
        guard slack == 0 else { return }
        // The last partial block too.
        var byte: UInt8 = 0
        while Glibc.write(descriptor, &byte, 1) == 1 {}
    }

    /// Bytes free on the filesystem of `disk`.
    static func free(_ disk: String) -> Int {
        var info = statvfs()
        guard statvfs(disk, &info) == 0 else { return 0 }
        return Int(info.f_bavail) * Int(info.f_frsize)
    }

    /// Every SQLite file on the disk passes `PRAGMA integrity_check`, and every JSON document parses.
    static func checkIntegrity(disk: String) throws {
        for path in ["\(disk)/app.sqlite", "\(disk)/state/cloud.sqlite"] where FileManager.default.fileExists(atPath: path) {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let database = try DatabaseQueue(path: path, configuration: configuration)
            let verdict = try database.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
            try database.close()
            guard verdict == "ok" else { throw HarnessFailure("\(path) is corrupted: \(verdict ?? "no answer")") }
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: "\(disk)/docs/Doc")) ?? [] where name.hasSuffix(".json") {
            let data = try Data(contentsOf: URL(fileURLWithPath: "\(disk)/docs/Doc/\(name)"))
            guard (try? JSONSerialization.jsonObject(with: data)) is [String: Any] else {
                throw HarnessFailure("\(disk)/docs/Doc/\(name) is not a JSON object any more")
            }
        }
    }

    /// The documents of the `Docs` zone, as `name → title|n`.
    static func documents(inEmbedded path: String) async throws -> [String: String] {
        let cloud = try EmbeddedCloud(path: path)
        var lines: [String: String] = [:]
        var token: ChangeToken?
        while true {
            let page = try await cloud.fetchChanges(in: ZoneID(zoneName: "Docs"), since: token, limit: 2_000)
            for record in page.modified {
                if case .string(let title)? = record.fields["title"], case .int64(let n)? = record.fields["n"] {
                    lines[record.id.recordName] = "\(title)|\(n)"
                }
            }
            for id in page.deleted { lines[id.recordName] = nil }
            token = page.token
            if !page.moreComing { break }
        }
        return lines
    }

    static func sync(gateway: String, in folder: ScenarioFolder, name: String) async throws -> (status: Int32, errors: String) {
        let child = try ChildProcess(
            gateway, arguments: ["sync", "--config", "config.yaml", "--progress", "none"], directory: folder.url.path,
            standardOutput: folder.path("\(name).out"), standardError: folder.path("\(name).err"))
        let status = try await child.wait(timeout: .seconds(120))
        return (status, ["out", "err"].map { (try? String(contentsOfFile: folder.path("\(name).\($0)"), encoding: .utf8)) ?? "" }.joined())
    }

    static func command(_ program: String, _ arguments: [String]) async throws {
        let child = try ChildProcess(program, arguments: arguments)
        let status = try await child.wait(timeout: .seconds(30))
        guard status == 0 else { throw HarnessFailure("\(program) \(arguments.joined(separator: " ")) exited \(status)") }
    }
}
