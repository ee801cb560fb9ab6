import AdapterKit
import CloudKitWeb
import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayTesting
import PluginAdapter
import TestScheduling
import Testing

/// A plugin that breaks the protocol or fails, and what the user sees: an error naming the
/// adapter, the plugin and what happened; nothing the plugin did not acknowledge marked synced;
/// the next call starts a new process and works once the plugin behaves.
struct Misbehaviour: Sendable, CustomStringConvertible {
    enum Phase: Sendable { case listing, download }
    enum Outcome: Sendable {
        case error(PluginError.Code, mentioning: String)
        /// The listing works; the record named is a failed record with this code, never offered.
        case problem(record: String, code: String)
        case works
    }

    var description: String
    var misbehave: JSONValue?
    var phase: Phase
    var outcome: Outcome
    var command = "python3"
    var arguments: [String]?
    var workingDirectory: String?
    /// Whether the plugin recovers once the test stops its misbehaviour (not so for a command
    /// that cannot start at all).
    var recovers = true

    init(
        _ description: String, _ method: String? = nil, _ how: String? = nil, phase: Phase = .listing, _ outcome: Outcome,
        command: String = "python3", arguments: [String]? = nil, workingDirectory: String? = nil, recovers: Bool = true
    ) {
        self.description = description
        if let method, let how { misbehave = .object(["method": .string(method), "how": .string(how)]) }
        self.phase = phase
        self.outcome = outcome
        self.command = command
        self.arguments = arguments
        self.workingDirectory = workingDirectory
        self.recovers = recovers
    }

    static let catalogue: [Misbehaviour] = [
        Misbehaviour("a command that does not exist", nil, nil, .error(.startFailed, mentioning: "cannot start"), command: "no-such-plugin-command", recovers: false),
        Misbehaviour(
            "a file that is not executable", nil, nil, .error(.startFailed, mentioning: "cannot start"), command: PluginFixtures.root.appendingPathComponent("README.md").path,
            arguments: [], recovers: false),
        Misbehaviour("a working directory that does not exist", nil, nil, .error(.startFailed, mentioning: "working_directory"), workingDirectory: "/nonexistent/folder", recovers: false),
        Misbehaviour("exits at once", "hello", "crash", .error(.exited, mentioning: "exited with status 3")),
        Misbehaviour("killed by a signal during the handshake", "hello", "kill", .error(.exited, mentioning: "killed by signal 9")),
        Misbehaviour("never answers the handshake", "hello", "hang", .error(.timedOut, mentioning: "no answer to hello within 5")),
        Misbehaviour("speaks another protocol version", "hello", "wrong-protocol", .error(.protocolMismatch, mentioning: "protocol version 99")),
        Misbehaviour("declares no record types", "hello", "no-types", .error(.malformedMessage, mentioning: "recordTypes")),
        Misbehaviour("answers with a line that is not JSON", "hello", "garbage", .error(.malformedMessage, mentioning: "not JSON")),
        Misbehaviour("answers with JSON that is not an object", "hello", "array", .error(.malformedMessage, mentioning: "not a JSON object")),
        Misbehaviour("crashes while listing", "list", "crash", .error(.exited, mentioning: "exited with status 3")),
        Misbehaviour("hangs while listing", "list", "hang", .error(.timedOut, mentioning: "no answer to list")),
        Misbehaviour("writes an oversized line", "list", "oversized", .error(.oversizedMessage, mentioning: "max_message_bytes")),
        Misbehaviour("answers another request than the one asked", "list", "wrong-id", .error(.unexpectedAnswer, mentioning: "not the request waiting")),
        Misbehaviour("answers with neither result nor error", "list", "no-result", .error(.malformedMessage, mentioning: "neither result nor error")),
        Misbehaviour("closes its standard output", "list", "close-stdout", .error(.exited, mentioning: "closed its standard output")),
        Misbehaviour("answers list without records", "list", "no-records", .error(.malformedMessage, mentioning: "without a records array")),
        Misbehaviour("answers list with deleted that is not an array", "list", "bad-deleted", .error(.malformedMessage, mentioning: "deleted")),
        Misbehaviour("lists a record whose name holds a newline", "list", "bad-name", .error(.malformedMessage, mentioning: "record 'bad\\u{a}name': its name holds a control character (at character 4)")),
        Misbehaviour("lists a record of a type it did not declare", "list", "unknown-type", .problem(record: "stranger", code: "unknownRecordType")),
        Misbehaviour("lists one record twice", "list", "duplicate", .problem(record: "twice", code: "duplicateRecord")),
        Misbehaviour("lists a field whose value does not fit its type", "list", "bad-field", .problem(record: "badfield", code: "invalidField")),
        Misbehaviour("writes to standard error", "list", "stderr-noise", .works),
        Misbehaviour("refuses a write with an error of its own", "write", "error", phase: .download, .error(.pluginReportedError, mentioning: "diskFull")),
        Misbehaviour("crashes during a write", "write", "crash", phase: .download, .error(.exited, mentioning: "exited with status 3")),
        Misbehaviour("writes one record and crashes", "write", "partial-write-crash", phase: .download, .error(.exited, mentioning: "exited with status 4")),
        Misbehaviour("writes everything and crashes before answering", "write", "write-then-crash", phase: .download, .error(.exited, mentioning: "exited with status 5")),
        Misbehaviour("hangs during a write", "write", "hang", phase: .download, .error(.timedOut, mentioning: "no answer to write")),
        Misbehaviour("acknowledges a write with records that are not an array", "write", "bad-ack", phase: .download, .error(.malformedMessage, mentioning: "not an array")),
        Misbehaviour("crashes while reading records", "read", "crash", phase: .download, .error(.exited, mentioning: "exited with status 3")),
        Misbehaviour("answers a read with garbage", "read", "garbage", phase: .download, .error(.malformedMessage, mentioning: "not JSON")),
    ]
}

@Suite("Plugin misbehaviour catalogue", .heavy)
struct PluginMisbehaviourTests {
    @Test(arguments: Misbehaviour.catalogue)
    func misbehaviour(_ bad: Misbehaviour) async throws {
        let directory = try TemporaryDirectory(prefix: "plugin-misbehaviour")
        defer { directory.remove() }
        // Short timeouts only where the case is a hang: the handshake's, or a request's.
        let hangs = bad.misbehave?["how"]?.stringValue == "hang"
        let hangsInHello = hangs && bad.misbehave?["method"]?.stringValue == "hello"
        let adapter = try PluginFixtures.misbehavingAdapter(
            in: directory, misbehave: bad.misbehave, command: bad.command, arguments: bad.arguments, workingDirectory: bad.workingDirectory,
            startTimeout: hangsInHello ? .seconds(5) : .seconds(60), requestTimeout: hangs ? .seconds(3) : .seconds(30))
        defer { Task { await adapter.close() } }
        let records = [PluginFixtures.note("a", "A"), PluginFixtures.note("b", "B")]

        switch (bad.phase, bad.outcome) {
        case (.listing, .error(let code, let mentioning)):
            try await expectFailure(code, mentioning: mentioning) { _ = try await adapter.pendingChangeCount() }
        case (.listing, .problem(let name, let code)):
            #expect(try await adapter.pendingChangeCount() == 0)
            let failed = try await adapter.failedRecords()
            #expect(failed.map(\.recordID.recordName) == [name])
            #expect(failed.first?.failure.code == code)
            #expect(try await adapter.pendingChanges(limit: 10).isEmpty, "a record the plugin cannot offer is never uploaded")
        case (.listing, .works):
            #expect(try await adapter.pendingChangeCount() == 0)
        case (.download, .error(let code, let mentioning)):
            try await expectFailure(code, mentioning: mentioning) { try await adapter.apply(PluginFixtures.download(records, marker: "t1")) }
            try FileManager.default.removeItem(atPath: directory.path("misbehave"))
            // What the plugin wrote before failing is the gateway's own write: committed as synced
            // record by record (so a later tombstone deletes it), never offered as a local edit.
            // The token does not move: the page downloads again.
            let held = try Self.heldRecords(in: directory)
            #expect(try await adapter.loadZoneState() == nil, "the token did not move")
            #expect(Set(try await adapter.syncedRecordIDs().map(\.recordName)) == held, "exactly what the plugin holds is marked synced")
            #expect(try await adapter.pendingChanges(limit: 10).isEmpty, "no write of the gateway's own is offered as a local edit")
        case (.download, _):
            Issue.record("a download case expects an error")
        }
        guard bad.recovers else { return }
        try? FileManager.default.removeItem(atPath: directory.path("misbehave"))
        // Behaving again, the plugin (a new process where the old one failed) takes the download.
        try await adapter.apply(PluginFixtures.download(records, marker: "t2"))
        #expect(try await adapter.loadZoneState() == ZoneSyncState(token: ChangeToken(data: Data("t2".utf8))).encoded())
        #expect(Set(try await adapter.syncedRecordIDs().map(\.recordName)) == ["a", "b"])
        #expect(try await adapter.pendingChanges(limit: 10).isEmpty)
    }

    @Test("a record the plugin lists but its read leaves out is a failed record naming why, not a change pending for good in silence")
    func listedButNeverRead() async throws {
        let directory = try TemporaryDirectory(prefix: "plugin-ghost")
        defer { directory.remove() }
        let adapter = try PluginFixtures.misbehavingAdapter(in: directory, misbehave: .object(["method": .string("list"), "how": .string("ghost")]))
        #expect(try await adapter.pendingChanges(limit: 10).isEmpty)
        let failed = try await adapter.failedRecords()
        #expect(failed.map(\.recordID.recordName) == ["ghost"])
        #expect(failed.first?.failure.code == "notReadable")
        #expect(try await adapter.pendingChanges(limit: 10).isEmpty, "not offered again while it stands")
        await adapter.close()
    }

    @Test("a sync's report names the plugin's own code (pluginExited), not the adapterFailed wrapping it")
    func reportCarriesPluginCode() async throws {
        let directory = try TemporaryDirectory(prefix: "plugin-code")
        defer { directory.remove() }
        let adapter = try PluginFixtures.misbehavingAdapter(
            in: directory, misbehave: .object(["method": .string("list"), "how": .string("crash")]))
        defer { Task { await adapter.close() } }
        let cloud = try EmbeddedCloud(path: directory.path("cloud.sqlite"))
        let report = try await Synchronizer(
            cloud: cloud, adapters: [SyncedAdapter(adapter)], configuration: SyncConfiguration(deviceID: "gateway")
        ).sync().adapters[0]
        #expect(report.error?.code == .adapterFailed)
        #expect(report.failureCode == "pluginExited", "\(String(describing: report.error))")
    }

    /// The names of the records the misbehaving plugin holds in its file.
    static func heldRecords(in directory: TemporaryDirectory) throws -> Set<String> {
        guard let data = FileManager.default.contents(atPath: directory.path("store/records.json")) else { return [] }
        return Set(((try JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]).keys)
    }

    private func expectFailure(_ code: PluginError.Code, mentioning: String, _ body: () async throws -> Void) async throws {
        do {
            try await body()
            Issue.record("expected \(code)")
        } catch let error as PluginError {
            #expect(error.code == code, "\(error)")
            let message = "\(error)"
            #expect(message.hasPrefix("adapter plugged: plugin "), "\(message)")
            #expect(message.contains(mentioning), "\(message)")
        }
    }
}

@Suite("Plugin supervision", .heavy)
struct PluginSupervisionTests {
    @Test("a plugin killed between calls is started again by the next call, and the kit's state carries on")
    func restartAfterKill() async throws {
        let directory = try TemporaryDirectory(prefix: "plugin-restart")
        defer { directory.remove() }
        let adapter = try PluginFixtures.misbehavingAdapter(in: directory, misbehave: nil)
        defer { Task { await adapter.close() } }
        try await adapter.apply(PluginFixtures.download([PluginFixtures.note("a", "A")], marker: "t1"))
        let store = try #require(adapter.store as? PluginStore)
        let pid = try #require(store.processID)
        kill(pid, SIGKILL)
        // Dead once the kernel has ended it: a zombie until reaped, or gone.
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline,
            let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
            !stat.contains(") Z ")
        {
            try await Task.sleep(for: .milliseconds(5))
        }
        #expect(try await adapter.pendingChangeCount() == 0)
        #expect(try await adapter.syncedRecordIDs().map(\.recordName) == ["a"])
    }

    @Test("a plugin process inherits none of the gateway's descriptors, so a closed connection or released lock is not kept open by it")
    func noInheritedDescriptors() async throws {
        let directory = try TemporaryDirectory(prefix: "plugin-descriptors")
        defer { directory.remove() }
        // Opened without close-on-exec, as SwiftNIO opens its sockets.
        let held = directory.path("held-by-the-gateway")
        #expect(FileManager.default.createFile(atPath: held, contents: Data()))
        let descriptor = open(held, O_RDONLY)
        #expect(descriptor >= 3)
        defer { close(descriptor) }
        let adapter = try PluginFixtures.misbehavingAdapter(in: directory, misbehave: nil)
        defer { Task { await adapter.close() } }
        try await adapter.apply(PluginFixtures.download([PluginFixtures.note("a", "A")], marker: "t1"))
        let store = try #require(adapter.store as? PluginStore)
        let pid = try #require(store.processID)
        let entries = try FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd")
        let targets = entries.compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/\(pid)/fd/\($0)") }
        #expect(!targets.contains { $0.hasSuffix("held-by-the-gateway") }, "the plugin holds: \(targets)")
        #expect(!targets.contains { $0.hasPrefix("socket:") }, "the plugin holds sockets: \(targets)")
    }

    @Test("a downloaded record whose name the protocol cannot carry is left out, and the rest of the page reaches the plugin")
    func unsendableNamesLeftOut() async throws {
        let directory = try TemporaryDirectory(prefix: "plugin-names")
        defer { directory.remove() }
        let adapter = try PluginFixtures.misbehavingAdapter(in: directory, misbehave: nil)
        let names = ["fine", "line\nbreak", "", String(repeating: "n", count: 256), "also fine"]
        try await adapter.apply(PluginFixtures.download(names.map { PluginFixtures.note($0, "title") }, marker: "t1"))
        #expect(try await adapter.syncedRecordIDs().map(\.recordName).sorted() == ["also fine", "fine"])
        #expect(try await adapter.pendingChangeCount() == 0)
        #expect(try await adapter.loadZoneState() != nil, "the page committed")
        await adapter.close()
    }
}
