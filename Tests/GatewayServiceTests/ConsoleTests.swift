import GatewayCore
import GatewayConfig
import GatewayCLI
import GatewayTesting
import Testing

@Suite("console output")
struct ConsoleTests {
    static func events(pending: Int) -> [SyncEvent] {
        var report = AdapterSyncReport(adapter: "notes")
        report.uploaded = pending
        return [.adapterStarted(adapter: "notes"), .willFetch(adapter: "notes"), .didFetch(adapter: "notes", written: 3, deleted: 1),
            .willUpload(adapter: "notes", pending: pending), .progress(adapter: "notes", done: pending / 2, total: pending),
            .progress(adapter: "notes", done: pending, total: pending), .adapterFinished(report)]
    }

    @Test("on a terminal the bar is redrawn in place with counts")
    func terminalBar() {
        let output = LockedValue<[String]>([])
        let view = SyncProgressView(interactive: true) { text in output.withLock { $0.append(text) } }
        for event in Self.events(pending: 10) { view.handle(event) }
        let lines = output.withLock { $0 }
        #expect(lines.allSatisfy { $0.hasPrefix("\r\u{1B}[2K") }, "every update redraws the same line")
        #expect(lines.contains { $0.contains("notes [############------------] up 5/10  down 4  conflicts 0") })
        #expect(lines.contains { $0.contains("[########################] up 10/10") })
        #expect(lines.last == "\r\u{1B}[2K", "the bar is cleared before the summary")
    }

    @Test("elsewhere progress is plain lines")
    func plainLines() {
        let output = LockedValue<[String]>([])
        let view = SyncProgressView(interactive: false) { text in output.withLock { $0.append(text) } }
        for event in Self.events(pending: 10) { view.handle(event) }
        #expect(output.withLock { $0 } == ["notes: syncing\n", "notes: uploading 10 change(s)\n", "notes: done\n"])
    }

    @Test("adapters of a parallel sync keep their own counts when their events interleave")
    func interleavedAdapters() {
        let output = LockedValue<[String]>([])
        let view = SyncProgressView(interactive: true) { text in output.withLock { $0.append(text) } }
        let events: [SyncEvent] = [
            .adapterStarted(adapter: "source"), .adapterStarted(adapter: "target"), .willUpload(adapter: "source", pending: 8),
            .didFetch(adapter: "target", written: 5, deleted: 0), .progress(adapter: "source", done: 4, total: 8),
            .didFetch(adapter: "target", written: 2, deleted: 0), .adapterFinished(AdapterSyncReport(adapter: "source")),
            .didFetch(adapter: "target", written: 1, deleted: 0),
        ]
        for event in events { view.handle(event) }
        let lines = output.withLock { $0 }
        #expect(lines.contains { $0.contains("source [############------------] up 4/8  down 0") })
        #expect(lines.contains { $0.contains("target [------------------------] up 0/0  down 7") })
        #expect(lines.last?.contains("target [------------------------] up 0/0  down 8") == true, "a finished adapter leaves the other's bar")
    }

    @Test("the summary lists counts, conflicts by resolution, failures, and uploads stopped at their bound")
    func summary() {
        var synced = AdapterSyncReport(adapter: "notes")
        synced.downloaded = 12
        synced.deletedLocally = 2
        synced.uploaded = 7
        synced.conflicts = [.serverWon: 2, .merged: 1]
        synced.failedRecords = 1
        synced.uploadBounded = true
        let failed = AdapterSyncReport(adapter: "crm", outcome: .failed(code: .retriesExhausted, message: "the cloud kept failing"))
        let text = SyncSummary.render(SyncReport(adapters: [synced, failed]), zones: ["notes": "NotesZone", "crm": "CRM"])
        #expect(
            text == """
                adapter  zone            downloaded  uploaded  conflicts                   failed  result
                notes    NotesZone  12 (+2 deleted)         7  3 (2 server won, 1 merged)       1  synced
                crm      CRM                      0         0  0                                0  failed
                note: adapter notes: local changes kept arriving during the sync; those not uploaded wait for the next sync
                note: adapter notes has 1 failed record(s); fix them, then `gateway retry`
                error: adapter crm: the cloud kept failing (retriesExhausted)

                """)
        #expect(!SyncSummary.isNothingToDo(SyncReport(adapters: [synced])))
        #expect(SyncSummary.render(SyncReport(adapters: [AdapterSyncReport(adapter: "a")])) == "Nothing to do: the adapter is in sync.\n")
    }
}
