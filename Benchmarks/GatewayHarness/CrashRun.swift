import Foundation
import GatewayTesting

/// Kills `gateway sync` with SIGKILL at random moments of each phase, restarts it until a sync
/// completes and has nothing left to do, then checks every side against the generated data.
struct CrashRun {
    /// Where a kill lands, told apart by the event `gateway sync --progress json` printed last.
    enum Phase: String, CaseIterable {
        /// A page is being fetched from the cloud.
        case download
        /// Merged changes are being written to the store with the new token.
        case apply
        /// A batch is being saved to the cloud (the next batch is read meanwhile).
        case upload
        /// A batch's outcome is being committed to the store.
        case commit

        /// The phase an event starts, if it starts one.
        init?(startedBy event: [String: Any]) {
            switch event["event"] as? String {
            case "willFetch": self = .download
            case "willApply" where (event["records"] as? Int ?? 0) > 0: self = .apply
            case "willUpload", "progress": self = .upload
            case "willCommit": self = .commit
            default: return nil
            }
        }
    }

    struct Result: Encodable {
        var records: Int
        var kills: Int
        var killsByPhase: [String: Int]
        var runsThatFinishedBeforeTheirKill: Int
        var syncsToFinish: Int
        var lost: Int
        var duplicated: Int
        var checksums: [String: String]
        var seconds: Double
    }

    let records: Int
    let kills: Int
    let batchSize: Int
    /// The gateway's `fetch_limit`: the harness's default, 500, keeps the download's pages (and
    /// the moments to kill in them) as they were before the gateway's default grew to 2,000.
    let fetchLimit: Int
    /// Phase starts a run may pass before its kill.
    let maximumSkip: Int
    /// Aim the runs at each phase in turn, so even a small run has kills in every phase.
    let eachPhase: Bool
    /// The gateway's `parallelism` (`nil`: its default, both adapters at once). With `1`, adapter
    /// b downloads only after a has uploaded, so every phase has moments to kill in even with
    /// few records; at once, a small upload may finish before a kill aimed at it lands.
    let parallelism: Int?
    let seed: UInt64
    let directory: URL
    let gateway: String
    /// Side b as a process plugin running this script (the example CSV plugin) instead of a
    /// second SQLite database; `nil`: two SQLite databases.
    var pluginScript: String?
    /// With a plugin, kill the plugin process instead of the gateway.
    var killPlugin = false

    func run() async throws -> Result {
        let started = ContinuousClock.now
        try? FileManager.default.removeItem(at: directory)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        var random = SeededGenerator(seed: seed)
        let half = records / 2
        let rowsA = (0..<half).map { HarnessData.Row.generated(id: String(format: "a-%06d", $0), using: &random) }
        let rowsB = (0..<(records - half)).map { HarnessData.Row.generated(id: String(format: "b-%06d", $0), using: &random) }
        try HarnessData.createDatabase(at: path("a.sqlite"), rows: rowsA)
        var config = HarnessData.config(
            stateDirectory: "state", cloud: "  kind: embedded\n  path: cloud.sqlite",
            adapters: pluginScript == nil ? [("a", "a.sqlite"), ("b", "b.sqlite")] : [("a", "a.sqlite")], batchSize: batchSize,
            fetchLimit: fetchLimit, parallelism: parallelism)
        if let pluginScript {
            try HarnessData.createCSVFolder(at: path("csv"), rows: rowsB)
            config += HarnessData.pluginAdapter(name: "b", script: pluginScript, folder: "csv")
        } else {
            try HarnessData.createDatabase(at: path("b.sqlite"), rows: rowsB)
        }
        try Data(config.utf8).write(to: directory.appendingPathComponent("config.yaml"))

        // Each run is killed a random number of phase starts in, a moment later, so the kills
        // move through the whole sync (every run gets somewhat further before it dies).
        var byPhase: [String: Int] = [:]
        var early = 0
        var attempts = 0
        while byPhase.values.reduce(0, +) < kills {
            attempts += 1
            // Once everything is synced, plugin kills land only in downloads, and only those aimed
            // at a sync's first download start (one in two): allow more attempts. With 6 per kill a
            // CI run saw 6 of 8 land when the sync had got faster.
            guard attempts <= kills * (killPlugin ? 10 : 4) else {
                throw HarnessFailure("only \(byPhase.values.reduce(0, +)) of \(kills) kills landed; use more records")
            }
            // With `eachPhase`, runs aim at the phases in turn, a phase start or two in; otherwise any
            // phase start counts.
            let target = eachPhase ? phaseOrder[(attempts - 1) % phaseOrder.count] : nil
            let skip = Int.random(in: 0...(eachPhase ? 1 : maximumSkip), using: &random)
            let delay = Duration.microseconds(Int.random(in: 0...3_000, using: &random))
            if let phase = try await killedSync(in: target, after: skip, delay: delay, attempt: attempts) {
                byPhase[phase.rawValue, default: 0] += 1
                print("kill \(byPhase.values.reduce(0, +)): \(phase.rawValue)")
            } else {
                early += 1
            }
        }

        var syncs = 0
        while true {
            syncs += 1
            guard syncs <= 10 else { throw HarnessFailure("no sync reported 'Nothing to do' after 10 runs") }
            let output = path("final-\(syncs).out")
            let child = try ChildProcess(
                gateway, arguments: ["sync", "--config", "config.yaml", "--progress", "none"], directory: directory.path,
                standardOutput: output, standardError: path("final-\(syncs).err"))
            let status = try await child.wait(timeout: .seconds(600))
            guard status == 0 else {
                throw HarnessFailure("gateway sync exited \(status): \((try? String(contentsOfFile: path("final-\(syncs).err"), encoding: .utf8)) ?? "")")
            }
            if try String(contentsOfFile: output, encoding: .utf8).hasPrefix("Nothing to do") { break }
        }

        let expected = Dictionary(uniqueKeysWithValues: (rowsA + rowsB).map { ($0.id, $0.line) })
        let sides = [
            "a": try HarnessData.read(database: path("a.sqlite")),
            "b": pluginScript == nil ? try HarnessData.read(database: path("b.sqlite")) : try HarnessData.read(csv: path("csv/Item.csv")),
            "cloud": try await HarnessData.read(cloud: path("cloud.sqlite")),
        ]
        var lost = 0
        var duplicated = 0
        for (side, lines) in sides {
            let missing = expected.filter { lines[$0.key] != $0.value }
            let extra = lines.keys.filter { expected[$0] == nil }
            if !missing.isEmpty { print("\(side): \(missing.count) rows lost or changed, for example \(missing.first!.key)") }
            if !extra.isEmpty { print("\(side): \(extra.count) rows that were never written, for example \(extra.first!)") }
            lost += missing.count
            duplicated += extra.count
        }
        let stores = pluginScript == nil ? ["a.sqlite", "b.sqlite"] : ["a.sqlite", "state/adapters/b.sqlite"]
        for store in stores where try HarnessData.pendingChanges(database: path(store), kit: store.hasPrefix("state/")) != 0 {
            throw HarnessFailure("\(store) still has pending changes after a sync reported nothing to do")
        }
        return Result(
            records: records, kills: byPhase.values.reduce(0, +), killsByPhase: byPhase, runsThatFinishedBeforeTheirKill: early,
            syncsToFinish: syncs, lost: lost, duplicated: duplicated, checksums: sides.mapValues(HarnessData.checksum),
            seconds: Double((ContinuousClock.now - started).components.seconds))
    }

    /// Starts a sync and kills it `delay` after the `skip + 1`-th start of `target` (of any phase
    /// when `nil`). Returns the phase the kill landed in, or `nil` when the sync ended first.
    private func killedSync(in target: Phase?, after skip: Int, delay: Duration, attempt: Int) async throws -> Phase? {
        let events = path("run-\(attempt).events")
        let child = try ChildProcess(
            gateway, arguments: ["sync", "--config", "config.yaml", "--progress", "json"], directory: directory.path,
            standardOutput: path("run-\(attempt).out"), standardError: events)
        var offset = 0
        var seen = 0
        let deadline = ContinuousClock.now + .seconds(300)
        while ContinuousClock.now < deadline {
            let finished = !child.isRunning
            let data = (try? Data(contentsOf: URL(fileURLWithPath: events))) ?? Data()
            if data.count > offset, let end = data.lastIndex(of: UInt8(ascii: "\n")), end >= offset {
                for line in data[offset...end].split(separator: UInt8(ascii: "\n")) {
                    guard let event = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                        let phase = Phase(startedBy: event), target == nil || target == phase,
                        // A plugin kill aims at the plugin adapter's own phases.
                        !killPlugin || event["adapter"] as? String == "b"
                    else { continue }
                    seen += 1
                    if seen > skip {
                        try await Task.sleep(for: delay)
                        guard child.isRunning else { return nil }
                        if killPlugin {
                            // The plugin is the gateway's child; the gateway lives on and fails
                            // (or retries) that adapter's sync.
                            let plugins = HarnessData.children(of: child.pid)
                            for plugin in plugins { kill(plugin, SIGKILL) }
                            _ = try await child.wait()
                            return plugins.isEmpty ? nil : phase
                        }
                        child.kill()
                        return try await child.wait() == 128 + 9 ? phase : nil
                    }
                }
                offset = end + 1
            }
            if finished { return nil }
            try await Task.sleep(for: .microseconds(200))
        }
        child.kill()
        _ = try await child.wait()
        throw HarnessFailure("sync \(attempt) neither reached a kill point nor ended in 300 s")
    }

    /// The phases runs aim at in turn. A killed plugin is started again, so a plugin kill that
    /// lands while the plugin idles lets the run finish everything, after which only downloads
    /// (of nothing) are left to aim at: plugin kills aim at the phases that need pending work
    /// first.
    private var phaseOrder: [Phase] { killPlugin ? [.apply, .upload, .commit, .download] : Phase.allCases }

    private func path(_ name: String) -> String { directory.appendingPathComponent(name).path }
}
