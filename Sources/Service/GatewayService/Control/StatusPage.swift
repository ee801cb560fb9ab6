import Foundation
import GatewayConfig
import GatewayCore

/// `GET /` of the control server: one server-rendered HTML page for operators. Per adapter its
/// kind, zone, state and why, counts, batch size, last success and last error; the last syncs;
/// charts of the last hour; failed records with their errors; and forms to sync now or retry
/// failed records, which ask for the control token (the page never contains it).
///
/// No build step and no framework: HTML, a stylesheet, inline SVG charts, and a few lines of
/// script that reload the page every 10 seconds unless a form is being filled in.
public struct StatusPage: Sendable {
    /// One adapter's row.
    public struct AdapterRow: Sendable {
        public var status: AdapterStatus
        public var health: GatewayMonitor.AdapterHealth
        /// Failed records, at most ``StatusPage/failedRecordsShown`` of them.
        public var failedRecords: [FailedRecord]
    }

    /// What the page says of the gateway itself, under its title.
    public struct About: Sendable {
        /// The release (`GatewayVersion.current`).
        public var version: String
        /// The cloud's kind (`cloud.kind`).
        public var cloudKind: String
        /// The resolved state folder (`gateway.state_dir`).
        public var stateDirectory: String
        /// When the service started.
        public var startedAt: Date

        /// What the page says of a gateway.
        public init(version: String = GatewayVersion.current, cloudKind: String, stateDirectory: String, startedAt: Date) {
            self.version = version
            self.cloudKind = cloudKind
            self.stateDirectory = stateDirectory
            self.startedAt = startedAt
        }
    }

    /// Failed records listed per adapter; the count above the list says how many there are.
    public static let failedRecordsShown = 50

    public var adapters: [AdapterRow]
    public var syncs: [GatewayMonitor.SyncSample]
    public var pending: [GatewayMonitor.PendingSample]
    public var inProgress: GatewayMonitor.SyncInProgress?
    /// Why the service is not ready, when it is not.
    public var notReadyReason: String?
    /// What the last action did, shown once above the tables.
    public var notice: String?
    /// Whether actions can work at all (a control token is configured).
    public var actionsEnabled: Bool
    public var now: Date
    /// The gateway's version, cloud, state folder and uptime; `nil` leaves the line out.
    public var about: About?

    /// The adapter's health in a word (``AdapterStatus/health(consecutiveFailures:lastFailureCode:)``,
    /// as `/status` and `gateway status --json` say it), with why when it is not `ok`.
    static func state(of row: AdapterRow) -> (word: String, why: String?) {
        let health = row.status.health(consecutiveFailures: row.health.consecutiveFailures, lastFailureCode: row.health.lastErrorCode)
        let why: String? =
            switch health {
            case .ok: nil
            case .unreachable: row.status.error
            case .paused: row.status.pausedReason
            case .stalled: row.health.lastError
            case .failing where row.health.consecutiveFailures > 0: row.health.lastError
            case .failing: row.status.failedRecords == 1 ? "1 failed record (listed below)" : "\(row.status.failedRecords) failed records (listed below)"
            case .pending:
                !row.status.hasChanges && row.status.pendingChanges == 0
                    ? "not synced yet" : row.status.pendingChanges == 1 ? "1 change to send" : "\(row.status.pendingChanges) changes to send"
            }
        return (health.rawValue, why)
    }

    public func html() -> String {
        var page = """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>Sync Gateway</title>
            <style>\(Self.style)</style>
            </head><body>
            <header><h1>Sync Gateway</h1>\(aboutLine())<p class="muted">\(htmlEscaped(Self.format(now)))\(inProgress.map { " · syncing since \(htmlEscaped(Self.format($0.startedAt))) (\(htmlEscaped($0.reasons.joined(separator: ", "))))" } ?? "")</p></header>

            """
        if let notice { page += "<p class=\"notice\" id=\"notice\">\(htmlEscaped(notice))</p>\n" }
        if let notReadyReason { page += "<p class=\"warn\" id=\"not-ready\">Not ready: \(htmlEscaped(notReadyReason))</p>\n" }
        page += adaptersSection() + chartsSection() + syncsSection() + failuresSection() + actionsSection()
        page += "<script>\(Self.script)</script>\n</body></html>\n"
        return page
    }

    private func adaptersSection() -> String {
        var rows = ""
        for row in adapters {
            let (word, why) = Self.state(of: row)
            let status = row.status
            rows += """
                <tr class="adapter" data-adapter="\(htmlEscaped(status.name))" data-state="\(word)">
                <td data-label="adapter"><strong>\(htmlEscaped(status.name))</strong></td>
                <td data-label="kind">\(htmlEscaped(status.kind))</td>
                <td data-label="zone">\(htmlEscaped(status.zone))</td>
                <td data-label="state"><span class="state \(word)">\(word)</span>\(why.map { "<br><small>\(htmlEscaped($0))</small>" } ?? "")</td>
                <td data-label="pending" class="num count-pending">\(status.pendingChanges)</td>
                <td data-label="failed" class="num count-failed">\(status.failedRecords)</td>
                <td data-label="batch size" class="num">\(row.health.batchSize ?? status.batchSize)</td>
                <td data-label="last success">\(row.health.lastSuccessAt.map { moment($0) } ?? "never")</td>
                <td data-label="last error">\(row.health.lastError.map { "<small>\(htmlEscaped($0))</small>" } ?? "")</td>
                </tr>

                """
        }
        return """
            <section><h2>Adapters</h2>
            <table id="adapters"><thead><tr><th>adapter</th><th>kind</th><th>zone</th><th>state</th><th>pending</th><th>failed</th>
            <th>batch size</th><th>last success</th><th>last error</th></tr></thead>
            <tbody>
            \(rows)</tbody></table></section>

            """
    }

    private func chartsSection() -> String {
        // The last hour, or since the first sample when the service is younger (a minute at least),
        // so the first minutes of a service do not crowd into the right edge.
        let earliest = (pending.map(\.at) + syncs.map(\.startedAt)).min() ?? now
        let start = min(max(now.addingTimeInterval(-GatewayMonitor.historyWindow), earliest), now.addingTimeInterval(-60))
        let charts = [
            ("Pending changes", "chart-pending", pending.map { ($0.at, Double($0.pending)) }),
            ("Records moved per sync", "chart-moved", syncs.map { ($0.finishedAt, Double($0.downloaded + $0.uploaded)) }),
            ("Sync duration (s)", "chart-duration", syncs.map { ($0.finishedAt, $0.duration) }),
        ]
        // A window of minutes (a young service) labels its times to the second.
        let short = now.timeIntervalSince(start) < 600
        let middle = start.addingTimeInterval(now.timeIntervalSince(start) / 2)
        let figures = charts.map { title, id, points in
            let sparkline = Sparkline(points: points, from: start, to: now)
            // The axes in HTML beside the drawing, which stretches to its box: the value scale
            // on the left, the times below (the window's start, its middle, now).
            return """
                <figure id="\(id)"><figcaption>\(title)</figcaption><div class="plot"><div class="scale"><span>\(sparkline.peakLabel)</span><span>0</span></div>\(sparkline.svg())</div>\
                <div class="times"><span>\(htmlEscaped(Self.clock(start, seconds: short)))</span><span>\(htmlEscaped(Self.clock(middle, seconds: short)))</span><span>now</span></div></figure>
                """
        }
        return "<section><h2>The last hour</h2><div class=\"charts\">\(figures.joined())</div></section>\n"
    }

    private func syncsSection() -> String {
        let recent = syncs.suffix(20).reversed()
        guard !recent.isEmpty else { return "<section><h2>Last syncs</h2><p class=\"muted\" id=\"syncs\">No sync has finished yet.</p></section>\n" }
        var rows = ""
        for sync in recent {
            rows += """
                <tr class="sync"><td data-label="finished">\(moment(sync.finishedAt))</td>
                <td data-label="reasons">\(htmlEscaped(sync.reasons.joined(separator: ", ")))</td>
                <td data-label="duration" class="num">\(String(format: "%.2f s", sync.duration))</td>
                <td data-label="down" class="num">\(sync.downloaded)</td><td data-label="up" class="num">\(sync.uploaded)</td>
                <td data-label="conflicts" class="num">\(sync.conflicts)</td><td data-label="failed" class="num">\(sync.failed)</td>
                <td data-label="result">\(sync.problems.isEmpty ? "ok" : "<small>\(htmlEscaped(sync.problems.joined(separator: "; ")))</small>")</td></tr>

                """
        }
        return """
            <section><h2>Last syncs</h2>
            <table id="syncs"><thead><tr><th>finished</th><th>reasons</th><th>duration</th><th>down</th><th>up</th><th>conflicts</th>
            <th>failed</th><th>result</th></tr></thead><tbody>
            \(rows)</tbody></table></section>

            """
    }

    private func failuresSection() -> String {
        let failing = adapters.filter { !$0.failedRecords.isEmpty }
        guard !failing.isEmpty else { return "<section><h2>Failed records</h2><p class=\"muted\" id=\"failures\">None.</p></section>\n" }
        var rows = ""
        for row in failing {
            for record in row.failedRecords {
                rows += """
                    <tr class="failure"><td data-label="adapter">\(htmlEscaped(row.status.name))</td>
                    <td data-label="record">\(htmlEscaped(record.recordID.recordName))</td>
                    <td data-label="code">\(htmlEscaped(record.failure.code))</td>
                    <td data-label="error"><small>\(htmlEscaped(record.failure.message))</small></td></tr>

                    """
            }
            if row.status.failedRecords > row.failedRecords.count {
                rows += "<tr><td colspan=\"4\" class=\"muted\">… and \(row.status.failedRecords - row.failedRecords.count) more of \(htmlEscaped(row.status.name)) (gateway status --failed)</td></tr>\n"
            }
        }
        return """
            <section><h2>Failed records</h2>
            <table id="failures"><thead><tr><th>adapter</th><th>record</th><th>code</th><th>error</th></tr></thead><tbody>
            \(rows)</tbody></table></section>

            """
    }

    private func actionsSection() -> String {
        guard actionsEnabled else {
            return "<section><h2>Actions</h2><p class=\"muted\">Set <code>control.token</code> in the config to sync or retry from here.</p></section>\n"
        }
        let options = adapters.map { "<option value=\"\(htmlEscaped($0.status.name))\">\(htmlEscaped($0.status.name))</option>" }.joined()
        func form(_ id: String, action: String, label: String) -> String {
            """
            <form method="post" action="\(action)" id="\(id)">
            <label>Control token <input type="password" name="token" autocomplete="current-password" required></label>
            <label>Adapter <select name="adapter"><option value="">all</option>\(options)</select></label>
            <button type="submit">\(label)</button></form>
            """
        }
        return """
            <section><h2>Actions</h2><div class="actions">
            \(form("sync-now", action: "/actions/sync", label: "Sync now"))
            \(form("retry-failed", action: "/actions/retry", label: "Retry failed records"))
            </div></section>

            """
    }

    /// The page shown instead of the status when the control server needs the token for every
    /// route (a non-loopback `listen`) and the browser has not signed in.
    public static func signIn(message: String?) -> String {
        """
        <!doctype html>
        <html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Sync Gateway: sign in</title><style>\(style)</style></head><body>
        <header><h1>Sync Gateway</h1></header>
        \(message.map { "<p class=\"warn\">\(htmlEscaped($0))</p>" } ?? "")
        <form method="post" action="/login" id="sign-in">
        <label>Control token <input type="password" name="token" autocomplete="current-password" required></label>
        <button type="submit">Sign in</button></form>
        </body></html>

        """
    }

    /// A moment as its date and time, with how long ago it was: "2026-11-27 12:00:03 UTC (3 s ago)".
    private func moment(_ date: Date) -> String {
        "<time datetime=\"\(htmlEscaped(Self.format(date)))\">\(htmlEscaped(Self.format(date)))</time> <small class=\"ago\">(\(Self.elapsed(from: date, to: now)) ago)</small>"
    }

    /// The time of day (to the minute, or to the second), for the charts' times.
    static func clock(_ date: Date, seconds: Bool = false) -> String {
        date.formatted(.iso8601.time(includingFractionalSeconds: false).timeSeparator(.colon)).prefix(seconds ? 8 : 5) + " UTC"
    }

    /// "version 0.9.0 · cloud embedded · state /srv/gw/.gateway · up 3 h 12 min".
    private func aboutLine() -> String {
        guard let about else { return "" }
        let text = "version \(about.version) · cloud \(about.cloudKind) · state \(about.stateDirectory) · up \(Self.elapsed(from: about.startedAt, to: now))"
        return "<p class=\"muted\" id=\"about\">\(htmlEscaped(text))</p>"
    }

    /// A duration in the largest two units: "42 s", "3 min 5 s", "2 h 10 min", "4 d 1 h".
    static func elapsed(from start: Date, to end: Date) -> String {
        let seconds = max(0, Int(end.timeIntervalSince(start)))
        switch seconds {
        case ..<60: return "\(seconds) s"
        case ..<3600: return "\(seconds / 60) min \(seconds % 60) s"
        case ..<86400: return "\(seconds / 3600) h \(seconds % 3600 / 60) min"
        default: return "\(seconds / 86400) d \(seconds % 86400 / 3600) h"
        }
    }

    static func format(_ date: Date) -> String {
        date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: false).timeSeparator(.colon)) + " UTC"
    }

    static let style = """
        body{font:15px/1.4 system-ui,sans-serif;margin:0 auto;max-width:72rem;padding:0 1rem 2rem;color:#1d2733}
        h1{font-size:1.4rem;margin:1rem 0 0}h2{font-size:1.1rem;margin:1.5rem 0 .5rem}
        .muted{color:#66707a}table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.35rem .5rem;border-bottom:1px solid #e2e6ea;vertical-align:top}
        .num{text-align:right;font-variant-numeric:tabular-nums}.state{font-weight:600;padding:.05rem .4rem;border-radius:.3rem}
        .ok{background:#dcf5e3;color:#16622e}.pending{background:#fff3cd;color:#7a5a00}.failing,.unreachable,.stalled{background:#fde2e1;color:#a1221b}.paused{background:#e5e7eb;color:#374151}
        .notice{background:#e0efff;padding:.5rem;border-radius:.3rem}.warn{background:#fde2e1;padding:.5rem;border-radius:.3rem}
        .charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(15rem,1fr));gap:1rem}figure{margin:0}figcaption{font-size:.85rem;color:#66707a}
        svg{width:100%;height:4rem;background:#f6f8fa;border-radius:.3rem}.plot{display:flex;gap:.3rem}.scale{display:flex;flex-direction:column;justify-content:space-between;font-size:.75rem;color:#66707a;text-align:right;min-width:2rem}
        .times{display:flex;justify-content:space-between;font-size:.75rem;color:#66707a;margin-left:2.3rem}.actions{display:flex;flex-wrap:wrap;gap:1.5rem}
        form label{display:block;margin:.3rem 0}button{padding:.4rem .9rem}
        @media (max-width:40rem){thead{display:none}tr{display:block;border-bottom:2px solid #e2e6ea;padding:.3rem 0}
        td{display:flex;justify-content:space-between;border:0;padding:.15rem 0}td::before{content:attr(data-label);color:#66707a;margin-right:1rem}}
        """

    /// Reloads every 10 seconds, unless the operator is typing into a form.
    static let script = """
        setInterval(function(){var a=document.activeElement;if(a&&a.form)return;
        for(var i of document.querySelectorAll('input'))if(i.value)return;location.replace('/');},10000);
        """
}

/// A line chart of samples between two moments, as inline SVG (no script, no library).
struct Sparkline {
    var points: [(Date, Double)]
    var from: Date
    var to: Date

    func svg(width: Double = 300, height: Double = 60) -> String {
        let inside = points.filter { $0.0 >= from && $0.0 <= to }
        let top = max(inside.map(\.1).max() ?? 0, 1)
        let span = max(to.timeIntervalSince(from), 1)
        let coordinates = inside.map { date, value in
            String(format: "%.1f,%.1f", date.timeIntervalSince(from) / span * width, height - 4 - value / top * (height - 8))
        }
        let line =
            coordinates.isEmpty
            ? "<text x=\"8\" y=\"34\" font-size=\"12\" fill=\"#66707a\">no data yet</text>"
            : "<polyline fill=\"none\" stroke=\"#2563eb\" stroke-width=\"2\" points=\"\(coordinates.joined(separator: " "))\"/>"
                + (coordinates.count == 1 ? "<circle r=\"3\" fill=\"#2563eb\" cx=\"\(coordinates[0].split(separator: ",")[0])\" cy=\"\(coordinates[0].split(separator: ",")[1])\"/>" : "")
        return "<svg viewBox=\"0 0 \(Int(width)) \(Int(height))\" preserveAspectRatio=\"none\" role=\"img\" aria-label=\"peak \(peakLabel)\">"
            + line + "</svg>"
    }

    /// The top of the value scale: the largest sample, at least 1.
    var peakLabel: String {
        let top = max(points.filter { $0.0 >= from && $0.0 <= to }.map(\.1).max() ?? 0, 1)
        return top >= 100 ? String(Int(top)) : String(format: "%.2g", top)
    }
}

/// Text made safe inside HTML elements and double-quoted attributes.
func htmlEscaped(_ text: String) -> String {
    var escaped = ""
    escaped.reserveCapacity(text.utf8.count)
    for character in text.unicodeScalars {
        switch character {
        case "&": escaped += "&amp;"
        case "<": escaped += "&lt;"
        case ">": escaped += "&gt;"
        case "\"": escaped += "&quot;"
        case "'": escaped += "&#39;"
        default: escaped.unicodeScalars.append(character)
        }
    }
    return escaped
}
