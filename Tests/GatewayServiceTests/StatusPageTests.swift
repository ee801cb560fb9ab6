import Foundation
import GatewayCore
import GatewayConfig
@testable import GatewayService
import GatewayTesting
import TestScheduling
import Testing

/// The status page of `gateway run` (`GET /`), in a real browser and over plain HTTP.
@Suite("status page", .heavy)
struct StatusPageTests {
    /// `gateway run` on the default config in a fresh clone, with `listen` and the token given,
    /// and the JSON adapter polling rarely so a change to it stays pending until a sync.
    struct RunningGateway {
        let clone: CLITests.FreshClone
        let service: ChildProcess
        let port: Int

        init(listen: String = "127.0.0.1:0", token: String = "test-token") async throws {
            clone = try CLITests.FreshClone()
            let configURL = clone.url.appendingPathComponent("config.yaml")
            let config = try String(contentsOf: configURL, encoding: .utf8)
                .replacingOccurrences(of: "listen: \"127.0.0.1:8787\"", with: "listen: \"\(listen)\"")
                .replacingOccurrences(of: "    zone: DocsZone\n", with: "    zone: DocsZone\n    poll_interval: 1h\n")
            try Data(config.utf8).write(to: configURL)
            service = try ChildProcess(
                try BuiltExecutable.path("gateway"), arguments: ["run"], directory: clone.url.path,
                environment: ProcessInfo.processInfo.environment.merging(["TERM": "dumb", "GATEWAY_TOKEN": token]) { _, new in new },
                standardOutput: clone.directory.path("run.out"), standardError: clone.directory.path("run.err"))
            let deadline = ContinuousClock.now + .seconds(60)
            var found: Int?
            while found == nil && ContinuousClock.now < deadline && service.isRunning {
                let log = (try? String(contentsOfFile: clone.directory.path("run.err"), encoding: .utf8)) ?? ""
                found = log.firstMatch(of: /address=[0-9.]+:(\d+) \[GatewayService\] control server listening/).flatMap { Int($0.1) }
                if found == nil { try await Task.sleep(for: .milliseconds(100)) }
            }
            guard let found else {
                service.kill()
                throw ConformanceFailure("the control server did not start: \((try? String(contentsOfFile: clone.directory.path("run.err"), encoding: .utf8)) ?? "")")
            }
            port = found
        }

        func call(_ method: String, _ path: String, headers: [String: String] = [:], body: String = "") async throws -> LoopbackHTTP.Response {
            try await LoopbackHTTP.send(method, port: port, path: path, headers: headers, body: Data(body.utf8))
        }

        func form(_ path: String, _ body: String, headers: [String: String] = [:]) async throws -> LoopbackHTTP.Response {
            try await call("POST", path, headers: ["Content-Type": "application/x-www-form-urlencoded"].merging(headers) { _, new in new }, body: body)
        }

        /// The finished syncs the service reports, from the page.
        func syncCount() async throws -> Int {
            try await call("GET", "/").text.components(separatedBy: "<tr class=\"sync\">").count - 1
        }

        func stop() async throws {
            service.terminate()
            _ = try await service.wait(timeout: .seconds(30))
            clone.directory.remove()
        }
    }

    @Test("in headless Chromium the page shows each adapter and its counts; 'Sync now' with the token runs a sync that then appears")
    func inBrowser() async throws {
        let gateway = try await RunningGateway()
        do {
            let browser = try await HeadlessBrowser()
            let page = "http://127.0.0.1:\(gateway.port)/"
            // The start sync, then a document the JSON adapter will see only when asked to sync.
            try await browser.waitUntil("the first sync") { try await gateway.syncCount() >= 1 }
            try Data("{\"title\": \"Fresh\"}".utf8).write(
                to: gateway.clone.url.appendingPathComponent(".gateway/examples/docs/Article/fresh.json"))

            try await browser.open(page)
            let rows = try #require(
                try await browser.evaluate(
                    """
                    [...document.querySelectorAll('#adapters tr.adapter')].map(r => ({
                      name: r.dataset.adapter, state: r.dataset.state,
                      kind: r.children[1].textContent, zone: r.children[2].textContent,
                      pending: +r.querySelector('.count-pending').textContent, failed: +r.querySelector('.count-failed').textContent }))
                    """) as? [[String: Any]])
            #expect(rows.map { $0["name"] as? String } == ["notes", "notes-replica", "docs"])
            #expect(rows.map { $0["kind"] as? String } == ["sqlite", "sqlite", "json"])
            #expect(rows.map { $0["zone"] as? String } == ["NotesZone", "NotesZone", "DocsZone"])
            #expect(rows.map { $0["pending"] as? Int } == [0, 0, 1], "the new document is pending: \(rows)")
            #expect(rows.map { $0["failed"] as? Int } == [0, 0, 0])
            #expect(rows.map { $0["state"] as? String } == ["ok", "ok", "pending"])
            let syncsBefore = try #require(try await browser.evaluate("document.querySelectorAll('#syncs tr.sync').length") as? Int)
            #expect(syncsBefore >= 1)
            #expect(try await browser.evaluate("document.body.innerText.includes('test-token')") as? Bool == false, "the page never shows the token")

            if let path = ProcessInfo.processInfo.environment["GATEWAY_STATUS_SCREENSHOT"] {
                try await browser.screenshot().write(to: URL(fileURLWithPath: path))
            }

            // Press "Sync now" as an operator does: type the token, press the button. On a page
            // opened just before, in one evaluation: the page reloads itself every 10 s, and a
            // press that meets the reload finds no form (then it is tried again).
            try await browser.waitUntil("the 'Sync now' form pressed") {
                try await browser.open(page)
                return try await browser.evaluate(
                    """
                    (() => {
                      const token = document.querySelector('#sync-now input[name=token]');
                      const button = document.querySelector('#sync-now button');
                      if (!token || !button) return false;
                      token.value = 'test-token';
                      button.click();
                      return true;
                    })()
                    """) as? Bool == true
            }
            try await browser.waitUntil("the page after 'Sync now'") {
                (try await browser.evaluate("document.readyState === 'complete' && location.search") as? String) == "?done=sync"
            }
            #expect((try await browser.evaluate("document.querySelector('#notice').textContent") as? String)?.hasPrefix("Sync requested") == true)
            // Everything below is read from one freshly opened page in one evaluation: the page
            // reloads itself every 10 s, and a read during that reload sees an empty document.
            var snapshot: [String: Any] = [:]
            try await browser.waitUntil("the new sync on the page") {
                try await browser.open(page)
                snapshot =
                    try await browser.evaluate(
                        """
                        ({ syncs: document.querySelectorAll('#syncs tr.sync').length,
                           docsPending: +document.querySelector('tr[data-adapter=docs] .count-pending').textContent,
                           reasons: [...document.querySelectorAll('#syncs tr.sync')].map(r => r.children[1].textContent),
                           charts: document.querySelectorAll('.charts svg polyline').length })
                        """) as? [String: Any] ?? [:]
                return (snapshot["syncs"] as? Int ?? 0) > syncsBefore && snapshot["docsPending"] as? Int == 0
            }
            // Newest first; the syncs since the press include the one it asked for (a change it
            // uploaded may bring a cloud-signalled one after it).
            let reasons = snapshot["reasons"] as? [String] ?? []
            #expect(reasons.prefix(reasons.count - syncsBefore).contains { $0.contains("http") }, "the new sync says why it ran: \(reasons)")
            #expect(snapshot["charts"] as? Int == 3, "the three charts have data")

            // The Grafana dashboard and the alert rules query only what /metrics exports.
            let metrics = try await gateway.call("GET", "/metrics").text
            let exported = Set(metrics.matches(of: /(?m)^(gateway_[a-z_]+)/).map { String($0.1) })
                .union(["gateway_conflicts_total"])  // exported from the first conflict on
            for file in ["grafana-dashboard.json", "prometheus-alerts.yml"] {
                let text = try String(contentsOf: Repository.root.appendingPathComponent("examples/service/\(file)"), encoding: .utf8)
                let used = Set(text.matches(of: /gateway_[a-z_]+/).map { String($0.0) })
                #expect(!used.isEmpty)
                #expect(used.subtracting(exported).isEmpty, "\(file) queries metrics the gateway does not export: \(used.subtracting(exported))")
            }
            let dashboard = try JSONSerialization.jsonObject(
                with: Data(contentsOf: Repository.root.appendingPathComponent("examples/service/grafana-dashboard.json"))) as? [String: Any]
            #expect((dashboard?["panels"] as? [Any])?.count ?? 0 >= 6)
        } catch {
            try await gateway.stop()
            throw error
        }
        try await gateway.stop()
    }

    @Test("unknown paths, missing and wrong tokens, huge and malformed forms get the right status and change nothing")
    func badInput() async throws {
        let gateway = try await RunningGateway()
        do {
            // A sync asked for over HTTP is counted when it is asked for, before the answer.
            func askedOverHTTP() async throws -> Int {
                let line = try await gateway.call("GET", "/metrics").text.split(separator: "\n")
                    .first { $0.hasPrefix("gateway_sync_requests_total{") && $0.contains("trigger=\"http\"") }
                return line.flatMap { Int($0.split(separator: " ").last ?? "") } ?? 0
            }
            #expect(try await askedOverHTTP() == 0)

            #expect(try await gateway.call("GET", "/nope").status == 404)
            #expect(try await gateway.call("GET", "/actions/sync").status == 404)
            #expect(try await gateway.call("POST", "/").status == 404)
            #expect(try await gateway.form("/actions/sync", "adapter=notes").status == 401, "no token")
            #expect(try await gateway.form("/actions/sync", "token=").status == 401, "an empty token")
            #expect(try await gateway.form("/actions/sync", "token=wrong").status == 401)
            #expect(try await gateway.form("/actions/retry", "token=test-token-and-more").status == 401)
            #expect(try await gateway.form("/actions/sync", "token=wrong", headers: ["Authorization": "Bearer test-token"]).status == 401,
                    "the form's token decides")
            #expect(try await gateway.form("/actions/sync", "token=test-token&adapter=nobody").status == 404)
            #expect(try await gateway.form("/actions/sync", "token=%zz").status == 400)
            #expect(try await gateway.form("/actions/sync", "token=a&token=test-token").status == 400, "a field twice")
            #expect(try await gateway.call("POST", "/actions/sync", headers: ["Content-Type": "application/json"], body: "{\"token\":\"test-token\"}").status == 415)
            let huge = "token=test-token&padding=" + String(repeating: "a", count: 1_000_000)
            #expect(try await gateway.form("/actions/sync", huge).status == 413)
            #expect(try await gateway.form("/login", "token=test-token").status == 303, "signing in works on loopback too")
            #expect(try await askedOverHTTP() == 0, "refused requests asked for no sync")

            // The same action, asked properly, does, and that sync runs.
            #expect(try await gateway.form("/actions/sync", "token=test-token&adapter=notes").status == 303)
            #expect(try await askedOverHTTP() == 1)
            let asked = ContinuousClock.now + .seconds(30)
            func ranForHTTP() async throws -> Bool {
                try await gateway.call("GET", "/").text.contains(/data-label="reasons">[^<]*http/)
            }
            while try await !ranForHTTP(), ContinuousClock.now < asked { try await Task.sleep(for: .milliseconds(100)) }
            #expect(try await ranForHTTP(), "a sync whose reasons include http finished")
            #expect(gateway.service.isRunning)
        } catch {
            try await gateway.stop()
            throw error
        }
        try await gateway.stop()
    }

    @Test("on a non-loopback listen the page needs the token: a sign-in form, then a session cookie that is not the token")
    func signIn() async throws {
        let gateway = try await RunningGateway(listen: "0.0.0.0:0", token: "s3cret token")
        do {
            let refused = try await gateway.call("GET", "/")
            #expect(refused.status == 401)
            #expect(refused.text.contains("id=\"sign-in\""))
            #expect(!refused.text.contains("id=\"adapters\""))
            #expect(try await gateway.call("GET", "/status").status == 401)
            #expect(try await gateway.form("/login", "token=wrong").status == 401)
            let signedIn = try await gateway.form("/login", "token=s3cret+token")
            #expect(signedIn.status == 303)
            let cookie = try #require(signedIn.headers.first { $0.key.lowercased() == "set-cookie" }?.value)
            #expect(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"))
            #expect(!cookie.contains("s3cret"), "the cookie is not the token")
            let pair = String(cookie.split(separator: ";")[0])
            let page = try await gateway.call("GET", "/", headers: ["Cookie": pair])
            #expect(page.status == 200)
            #expect(page.text.contains("id=\"adapters\""))
            #expect(!page.text.contains("s3cret"))
            #expect(try await gateway.call("GET", "/", headers: ["Cookie": "gateway_session=forged"]).status == 401)
            #expect(try await gateway.call("GET", "/", headers: ["Authorization": "Bearer s3cret token"]).status == 200)
        } catch {
            try await gateway.stop()
            throw error
        }
        try await gateway.stop()
    }

    @Test("the page escapes what stores and errors say, names why an adapter is not synced, and lists failed records")
    func rendering() throws {
        let zone = ZoneID(zoneName: "Z<one>")
        func row(_ name: String, pending: Int = 0, failed: [FailedRecord] = [], error: String? = nil, paused: String? = nil, failures: Int = 0)
            -> StatusPage.AdapterRow
        {
            var status = AdapterStatus(
                name: name, kind: "sqlite", zone: zone.zoneName, hasChanges: pending > 0, pendingChanges: pending, failedRecords: failed.count,
                batchSize: 50, hasSynced: true, pausedReason: paused)
            status.error = error
            return StatusPage.AdapterRow(
                status: status,
                health: GatewayMonitor.AdapterHealth(lastSuccessAt: nil, consecutiveFailures: failures, lastError: failures > 0 ? "network <down>" : nil),
                failedRecords: failed)
        }
        let refused = FailedRecord(
            recordID: RecordID(recordName: "<script>alert(1)</script>", zoneID: zone), failure: RecordFailure(version: 1, code: "invalidArguments", message: "field \"x\" & more"))
        let page = StatusPage(
            adapters: [
                row("<b>a</b>"), row("pending", pending: 3), row("refused", failed: [refused]), row("broken", error: "the store failed"),
                row("paused", paused: "zone deleted"), row("flaky", failures: 2),
            ],
            syncs: [], pending: [], inProgress: nil, notReadyReason: nil, notice: nil, actionsEnabled: false, now: Date())
        let html = page.html()
        #expect(!html.contains("<b>a</b>") && html.contains("&lt;b&gt;a&lt;/b&gt;"))
        #expect(!html.contains("<script>alert") && html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"))
        #expect(html.contains("field &quot;x&quot; &amp; more"))
        #expect(html.contains("Z&lt;one&gt;"))
        #expect(page.adapters.map { StatusPage.state(of: $0).word } == ["ok", "pending", "failing", "unreachable", "paused", "failing"])
        #expect(StatusPage.state(of: page.adapters[5]).why == "network <down>")
        #expect(html.contains("Set <code>control.token</code>"), "no token: the page says how to enable actions instead of showing forms")
        #expect(!html.contains("id=\"sync-now\""))
        #expect(html.components(separatedBy: "<script>").count == 2, "one script, the page's own")
        #expect(!html.contains("id=\"about\""), "no gateway line without what it says")

        var described = page
        described.about = StatusPage.About(cloudKind: "embedded", stateDirectory: "/srv/<gw>", startedAt: page.now.addingTimeInterval(-3725))
        let line = described.html()
        #expect(line.contains("version \(GatewayVersion.current) · cloud embedded · state /srv/&lt;gw&gt; · up 1 h 2 min"), "\(line.prefix(1500))")
        #expect(StatusPage.elapsed(from: Date(timeIntervalSince1970: 0), to: Date(timeIntervalSince1970: 42)) == "42 s")

        // Charts carry their scale and times; moments say how long ago they were.
        var busy = page
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        busy.now = now
        busy.syncs = [
            GatewayMonitor.SyncSample(
                startedAt: now.addingTimeInterval(-1800), finishedAt: now.addingTimeInterval(-1799), reasons: ["interval"], downloaded: 250, uploaded: 0,
                conflicts: 0, failed: 0, problems: [])
        ]
        busy.adapters[0].health.lastSuccessAt = now.addingTimeInterval(-3)
        let charted = busy.html()
        #expect(charted.contains("<div class=\"scale\"><span>250</span><span>0</span></div>"), "the scale runs from 0 to the peak")
        #expect(charted.contains("<div class=\"times\"><span>"), "times under each chart")
        #expect(charted.contains("<span>now</span></div></figure>"))
        #expect(charted.contains("(3 s ago)"), "the last success says how long ago it was")
        #expect(charted.contains("(29 min 59 s ago)"), "so does each finished sync")
        #expect(StatusPage.elapsed(from: Date(timeIntervalSince1970: 0), to: Date(timeIntervalSince1970: 90_000)) == "1 d 1 h")
    }

    @Test("forms are parsed strictly", arguments: [
        ("token=a+b%21&adapter=", ["token": "a b!", "adapter": ""]),
        ("token=x", ["token": "x"]),
        ("", [:]),
        ("&&token=x&", ["token": "x"]),
    ])
    func forms(body: String, expected: [String: String]) throws {
        #expect(try ControlForm(contentType: "application/x-www-form-urlencoded; charset=utf-8", body: body).fields == expected)
    }

    @Test("forms that are not forms, or badly encoded, are refused")
    func badForms() {
        #expect(throws: ControlForm.Problem.notAForm) { try ControlForm(contentType: "application/json", body: "token=x") }
        #expect(throws: ControlForm.Problem.notAForm) { try ControlForm(contentType: nil, body: "token=x") }
        #expect(throws: ControlForm.Problem.self) { try ControlForm(contentType: "application/x-www-form-urlencoded", body: "token=%zz") }
        #expect(throws: ControlForm.Problem.self) { try ControlForm(contentType: "application/x-www-form-urlencoded", body: "=x") }
        #expect(throws: ControlForm.Problem.self) { try ControlForm(contentType: "application/x-www-form-urlencoded", body: "a=1&a=2") }
    }

    @Test("the sync history keeps an hour and a bounded number of entries")
    func history() {
        let monitor = GatewayMonitor()
        let now = Date()
        monitor.pendingChanges(5, at: now.addingTimeInterval(-2 * 3600))
        monitor.pendingChanges(7, at: now.addingTimeInterval(-10))
        #expect(monitor.recentPending.map(\.pending) == [7], "older than an hour is dropped")
        for index in 0..<(GatewayMonitor.historyLimit + 10) { monitor.pendingChanges(index, at: now) }
        #expect(monitor.recentPending.count == GatewayMonitor.historyLimit)
        #expect(monitor.recentPending.last?.pending == GatewayMonitor.historyLimit + 9)
    }
}
