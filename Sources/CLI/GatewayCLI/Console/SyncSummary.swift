import GatewayCore

/// The per-adapter summary `gateway sync` prints when it ends.
public enum SyncSummary {
    /// A zone as the summary names it: another user's with its owner.
    static func zoneText(_ zone: ZoneID) -> String {
        zone.ownerName == ZoneID.defaultOwnerName ? zone.zoneName : "\(zone.zoneName) (\(zone.ownerName))"
    }

    /// Whether the sync moved nothing and everything synced.
    public static func isNothingToDo(_ report: SyncReport) -> Bool {
        report.succeeded
            && report.adapters.allSatisfy {
                $0.downloaded + $0.deletedLocally + $0.uploaded + $0.deletedRemotely + $0.conflictCount + $0.failedRecords + $0.matched + $0.refusedEdits
                    + $0.failingRecordCount == 0
            }
    }

    /// A table with one line per adapter: downloaded, uploaded, conflicts with how they were
    /// resolved, the records that stay failed and the outcome; failures are explained below it.
    /// - Parameter templates: whether the config has `database: shared` templates.
    public static func render(_ report: SyncReport, zones: [String: String] = [:], templates: Bool = false) -> String {
        if report.adapters.isEmpty, templates {
            return "No zone is shared with this user yet: accept one with `gateway share accept OWNER ZONE`.\n"
        }
        if report.adapters.isEmpty { return "No adapters to sync: add one under 'adapters:' in the config.\n" }
        if isNothingToDo(report) {
            let count = report.adapters.count
            return "Nothing to do: \(count == 1 ? "the adapter is" : "all \(count) adapters are") in sync.\n"
        }
        var rows: [[String]] = [["adapter", "zone", "downloaded", "uploaded", "conflicts", "failed", "result"]]
        for adapter in report.adapters {
            rows.append([
                adapter.adapter, zones[adapter.adapter] ?? adapter.zone.map(Self.zoneText) ?? "",
                counted(adapter.downloaded, deleted: adapter.deletedLocally),
                counted(adapter.uploaded, deleted: adapter.deletedRemotely),
                // Every record that stays failed, as the note below counts them: one that failed
                // in an earlier sync and was not sent again is failed still.
                conflicts(adapter), "\(max(adapter.markedFailedRecords, adapter.failingRecordCount))", outcome(adapter.outcome),
            ])
        }
        var text = TextTable.render(rows, rightAligned: [2, 3, 5])
        for adapter in report.adapters {
            if case .failed(let code, let message) = adapter.outcome {
                text += "error: adapter \(adapter.adapter): \(message) (\(adapter.failureCode ?? code.rawValue))\n"
            } else if case .paused(let reason) = adapter.outcome {
                text += "paused: adapter \(adapter.adapter): \(reason)\n"
            }
            if let recovery = adapter.zoneRecovery {
                text += "warning: adapter \(adapter.adapter): \(recovery)\n"
            }
            if adapter.refusedEdits > 0 {
                text += "note: adapter \(adapter.adapter): \(adapter.refusedEdits) local edit(s) refused by a read-only share were replaced by the owner's version; they are kept in the state folder's refused/\(adapter.adapter).jsonl\n"
            }
            if adapter.uploadBounded {
                text += "note: adapter \(adapter.adapter): local changes kept arriving during the sync; those not uploaded wait for the next sync\n"
            }
            if adapter.matched > 0 {
                text += "note: adapter \(adapter.adapter): \(adapter.matched) record(s) held the same values as the cloud and were adopted as synced (nothing written)\n"
            }
            if !adapter.unresolvedFailures.isEmpty {
                text += "note: adapter \(adapter.adapter): \(adapter.unresolvedFailures.count) conflict(s) its resolver could not settle stay pending, both versions kept; the next sync asks the resolver again\n"
                for record in adapter.unresolvedFailures.prefix(10) {
                    text += "  \(TerminalText.printable(record.recordID.recordName)): \(TerminalText.printable(record.failure.message)) (\(record.failure.code))\n"
                }
            }
            let failing = max(adapter.markedFailedRecords, adapter.failingRecordCount)
            if failing > 0 {
                // A download the store refused needs no retry: every sync tries it again.
                let refused = min(adapter.refusedAtEnd.count, failing)
                let advice =
                    refused == failing
                    ? "the store refused the cloud's version of each and keeps its own; every sync tries again, so change the record or the store's column, constraint or key"
                    : refused == 0
                        ? "fix them, then `gateway retry`"
                        : "fix them, then `gateway retry` (the store refused the cloud's version of \(refused) of them; every sync tries those again)"
                text += "note: adapter \(adapter.adapter) has \(failing) failed record(s); \(advice)\n"
                for record in adapter.failingRecords {
                    text += "  \(TerminalText.printable(record.recordID.recordName)): \(TerminalText.printable(record.failure.message)) (\(record.failure.code))\n"
                }
                if adapter.failingRecordCount > adapter.failingRecords.count {
                    text += "  … and \(adapter.failingRecordCount - adapter.failingRecords.count) more (`gateway status --failed` lists them)\n"
                }
            }
        }
        return text
    }

    private static func counted(_ written: Int, deleted: Int) -> String {
        deleted == 0 ? "\(written)" : "\(written) (+\(deleted) deleted)"
    }

    static func conflicts(_ adapter: AdapterSyncReport) -> String {
        guard adapter.conflictCount > 0 else { return "0" }
        let parts = ConflictOutcome.allCases.compactMap { outcome -> String? in
            guard let count = adapter.conflicts[outcome], count > 0 else { return nil }
            let label = switch outcome {
            case .serverWon: "server won"
            case .localWon: "local won"
            case .merged: "merged"
            case .unresolved: "unresolved"
            }
            return "\(count) \(label)"
        }
        return "\(adapter.conflictCount) (\(parts.joined(separator: ", ")))"
    }

    private static func outcome(_ outcome: AdapterSyncReport.Outcome) -> String {
        switch outcome {
        case .synced: "synced"
        case .paused: "paused"
        case .failed: "failed"
        }
    }
}

/// Plain text tables with aligned columns.
public enum TextTable {
    /// Renders rows (the first is the header) with two spaces between columns.
    public static func render(_ rows: [[String]], rightAligned: Set<Int> = []) -> String {
        let columns = rows.map(\.count).max() ?? 0
        var widths = [Int](repeating: 0, count: columns)
        for row in rows { for (index, cell) in row.enumerated() { widths[index] = max(widths[index], cell.count) } }
        var text = ""
        for row in rows {
            var line = ""
            for (index, cell) in row.enumerated() {
                let padding = String(repeating: " ", count: widths[index] - cell.count)
                if index > 0 { line += "  " }
                line += rightAligned.contains(index) ? padding + cell : cell + padding
            }
            while line.hasSuffix(" ") { line.removeLast() }
            text += line + "\n"
        }
        return text
    }
}
