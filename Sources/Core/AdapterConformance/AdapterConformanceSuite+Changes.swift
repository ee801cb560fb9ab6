import Foundation
import GatewayCore

extension AdapterConformanceSuite {
    static let changeCases: [AdapterConformanceCase] = [
        AdapterConformanceCase("local saves and deletes are pending, oldest first, sharing the limit") { harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try await adapter.apply(download([note("old", title: "O")], marker: "t1"))
            try await harness.saveLocally(note("a", title: "A"), in: adapter)
            try await harness.observe(adapter)
            try await harness.deleteLocally(note("old", title: "").id, in: adapter)
            try await harness.observe(adapter)
            try await harness.saveLocally(note("b", title: "B"), in: adapter)
            try expectEqual(try await adapter.hasChanges(), true, "hasChanges after local edits")
            try expectEqual(try await adapter.pendingChangeCount(), 3, "pending count")
            let all = try await adapter.pendingChanges(limit: 10)
            try expectEqual(all.saves.map(\.record.id.recordName), ["a", "b"], "pending saves in order")
            try expectEqual(all.deletes.map(\.recordID.recordName), ["old"], "pending deletes")
            try expect(all.deletes[0].metadata != nil, "a pending delete of a synced record carries its metadata")
            try expect(all.saves[0].metadata == nil, "a new record has no metadata")
            try expectEqual(all.saves[0].record.fields, note("a", title: "A").fields, "pending values")
            let versions = all.saves.map(\.version) + all.deletes.map(\.version)
            try expect(all.saves[0].version < all.deletes[0].version && all.deletes[0].version < all.saves[1].version, "versions follow the edits: \(versions)")
            let later = try await adapter.pendingChanges(limit: 10, after: all.saves[0].version)
            try expectEqual(later.saves.map(\.record.id.recordName), ["b"], "changes after a version: saves")
            try expectEqual(later.deletes.map(\.recordID.recordName), ["old"], "changes after a version: deletes")
            try expect(try await adapter.pendingChanges(limit: 10, after: all.saves[1].version).isEmpty, "nothing after the latest version")
            let two = try await adapter.pendingChanges(limit: 2)
            try expectEqual(two.count, 2, "saves and deletes share the limit")
            try expectEqual(two.saves.map(\.record.id.recordName), ["a"], "the oldest save comes first")
            try expectEqual(two.deletes.map(\.recordID.recordName), ["old"], "then the delete")
        },
        AdapterConformanceCase("commit clears only what was read; an edit made during the upload stays pending") {
            harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try await harness.saveLocally(note("a", title: "v1"), in: adapter)
            try await harness.saveLocally(note("b", title: "B"), in: adapter)
            let read = try await adapter.pendingChanges(limit: 10)
            try await harness.saveLocally(note("a", title: "v2"), in: adapter)
            var update = SyncStateUpdate(zoneState: zoneState("t1"))
            for save in read.saves {
                update.metadata[save.record.id] = metadata("tag-1", for: save.record)
                update.settled[save.record.id] = save.version
            }
            try await adapter.commit(update)
            let after = try await adapter.pendingChanges(limit: 10)
            try expectEqual(after.saves.map(\.record.id.recordName), ["a"], "the record edited during the upload")
            try expectEqual(after.saves.first?.record.fields["title"], .string("v2"), "its newest values")
            try expectEqual(after.saves.first?.metadata, metadata("tag-1", for: note("a", title: "v1")), "its new metadata")
            try expectEqual(try await adapter.loadZoneState(), zoneState("t1"), "the zone state")
        },
        AdapterConformanceCase("intents marked as sending are what every read returns until later metadata replaces them") {
            harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try await adapter.apply(download([note("synced", title: "S")], marker: "t1"))
            for name in ["a", "b", "c"] { try await harness.saveLocally(note(name, title: name), in: adapter) }
            try await harness.saveLocally(note("synced", title: "S2"), in: adapter)
            let read = try await adapter.pendingChanges(limit: 10)
            var intents: [RecordID: Data] = [:]
            var sending = SyncStateUpdate(zoneState: zoneState("t1"))
            for save in read.saves {
                var intent = try save.metadata.map(RecordMetadata.init(decoding:))
                    ?? RecordMetadata(changeTag: nil, recordType: save.record.recordType, fingerprints: [:])
                intent.recordSending(save.record.fields)
                intents[save.record.id] = intent.encoded()
                sending.metadata[save.record.id] = intent.encoded()
                sending.sending.insert(save.record.id)
            }
            try expectEqual(intents.count, 4, "records about to be sent")
            try await adapter.commit(sending)
            let again = try await adapter.pendingChanges(limit: 10)
            try expectEqual(
                Dictionary(uniqueKeysWithValues: again.saves.map { ($0.record.id, $0.metadata) }), intents.mapValues { $0 },
                "pending changes carry the intents")
            try expectEqual(Set(try await adapter.syncedRecordIDs()), Set(intents.keys), "records with an intent count as synced")

            // The answer: a and the synced record saved, b and c unanswered (they stay pending).
            let (a, b, c, synced) = (note("a", title: "").id, note("b", title: "").id, note("c", title: "").id, note("synced", title: "").id)
            var answer = SyncStateUpdate(zoneState: zoneState("t2"))
            for save in read.saves where [a, synced].contains(save.record.id) {
                answer.metadata[save.record.id] = metadata("tag-2", for: save.record)
                answer.settled[save.record.id] = save.version
            }
            try await adapter.commit(answer)
            var state = try await adapter.localState(for: [a, b, c, synced])
            try expectEqual(state[a]?.metadata, metadata("tag-2", for: note("a", title: "a")), "an answered record's metadata")
            try expectEqual(state[synced]?.metadata, metadata("tag-2", for: note("synced", title: "S2")), "an answered update's metadata")
            try expectEqual(state[b]?.metadata, intents[b], "an unanswered record keeps its intent")
            try expectEqual(state[c]?.pendingVersion != nil, true, "an unanswered record stays pending")

            // Other writes keep the intents: an apply of another record, then a new intent for c only.
            try await adapter.apply(download([note("other", title: "O")], marker: "t3"))
            var retry = SyncStateUpdate(zoneState: zoneState("t4"))
            var newer = RecordMetadata(changeTag: nil, recordType: "Note", fingerprints: [:])
            newer.recordSending(note("c", title: "c2").fields)
            retry.metadata[c] = newer.encoded()
            retry.sending = [c]
            try await adapter.commit(retry)
            state = try await adapter.localState(for: [b, c])
            try expectEqual(state[b]?.metadata, intents[b], "b's intent outlives unrelated writes")
            try expectEqual(state[c]?.metadata, newer.encoded(), "a newer intent replaces an older one")
            try expectEqual(try await adapter.pendingChangeCount(), 2, "b and c are still pending")
        },
        AdapterConformanceCase("apply leaves alone a record edited locally after it was read") { harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try await adapter.apply(download([note("a", title: "base")], marker: "t1"))
            try await harness.saveLocally(note("a", title: "local edit"), in: adapter)
            let id = note("a", title: "").id
            let read = try await adapter.localState(for: [id])
            try expectEqual(read[id]?.record?.fields["title"], .string("local edit"), "local state carries a pending record's values")
            try await harness.saveLocally(note("a", title: "later edit"), in: adapter)
            var changes = download([note("a", title: "server")], marker: "t2")
            changes.expectedPendingVersions[id] = read[id]?.pendingVersion ?? 0
            changes.state.settled[id] = read[id]?.pendingVersion ?? 0
            try await adapter.apply(changes)
            let stored = try await harness.storedRecords(in: adapter)
            try expectEqual(stored[id]?.fields["title"], .string("later edit"), "the later local edit survives")
            try expectEqual(try await adapter.pendingChangeCount(), 1, "the later edit stays pending")
            try expectEqual(try await adapter.loadZoneState(), zoneState("t2"), "the zone state still moves")
            let state = try await adapter.localState(for: [id])
            try expectEqual(state[id]?.metadata, metadata("tag-t1", for: note("a", title: "base")), "the metadata is untouched")
        },
        AdapterConformanceCase("deletes: a local delete is pending until uploaded; pending local deletes survive apply") {
            harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try await adapter.apply(download([note("a", title: "A"), note("b", title: "B")], marker: "t1"))
            try await harness.deleteLocally(note("a", title: "").id, in: adapter)
            let pending = try await adapter.pendingChanges(limit: 10)
            try expectEqual(pending.deletes.map(\.recordID.recordName), ["a"], "the pending delete")
            try await adapter.apply(download([note("b", title: "B2")], marker: "t2"))
            try expectEqual(try await adapter.pendingChangeCount(), 1, "the pending delete survives an unrelated apply")
            var update = SyncStateUpdate(removedMetadata: [pending.deletes[0].recordID], zoneState: zoneState("t3"))
            update.settled[pending.deletes[0].recordID] = pending.deletes[0].version
            try await adapter.commit(update)
            try expectEqual(try await adapter.hasChanges(), false, "nothing pending after the delete was uploaded")
            try expectEqual(try await adapter.syncedRecordIDs(), [note("b", title: "").id], "synced records")
        },
        AdapterConformanceCase("a confirmed delete's metadata is kept, though the store no longer holds the record") {
            harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try await adapter.apply(download([note("a", title: "A"), note("b", title: "B")], marker: "t1"))
            let id = note("a", title: "").id
            try await harness.deleteLocally(id, in: adapter)
            let pending = try await adapter.pendingChanges(limit: 10)
            var update = SyncStateUpdate(zoneState: zoneState("t2"))
            update.metadata[id] = RecordMetadata.encodedDeletion()
            update.settled[id] = pending.deletes.first?.version ?? 0
            try await adapter.commit(update)
            try expectEqual(try await adapter.hasChanges(), false, "nothing pending after the delete was confirmed")
            try expectEqual(Set(try await adapter.syncedRecordIDs()), [id, note("b", title: "").id], "the deleted record's metadata counts")
            let state = try await adapter.localState(for: [id])
            try expectEqual(state[id]?.metadata, RecordMetadata.encodedDeletion(), "its metadata, byte for byte")
            try expect(state[id]?.record == nil, "no record")
        },
        AdapterConformanceCase("failed records stay pending but are not offered until they change or are retried") {
            harness in
            let adapter = try await harness.makeAdapter(zone: zone)
            try await harness.saveLocally(note("a", title: "too big"), in: adapter)
            // A scanning store finds both edits in one look and may list them in any order.
            try await harness.observe(adapter)
            try await harness.saveLocally(note("b", title: "fine"), in: adapter)
            let read = try await adapter.pendingChanges(limit: 10)
            guard let a = read.saves.first(where: { $0.record.id.recordName == "a" }) else {
                throw ConformanceFailure("a's save is pending")
            }
            var update = SyncStateUpdate(zoneState: zoneState("t1"))
            update.failures[a.record.id] = RecordFailure(version: a.version, code: "limitExceeded", message: "record too large")
            try await adapter.commit(update)
            try expectEqual(try await adapter.pendingChangeCount(), 2, "a failed record still counts as pending")
            guard harness.keepsFailureMarks else {
                // Without failure marks, the record is tried again at every sync.
                try expectEqual(
                    Set(try await adapter.pendingChanges(limit: 10).saves.map(\.record.id.recordName)), ["a", "b"],
                    "a failed record is offered again by an adapter without failure marks")
                try expect(try await adapter.failedRecords().isEmpty, "no failure marks")
                return
            }
            try expectEqual(try await adapter.pendingChanges(limit: 10).saves.map(\.record.id.recordName), ["b"], "offered records")
            let failed = try await adapter.failedRecords()
            try expectEqual(failed.map(\.recordID.recordName), ["a"], "failed records")
            try expectEqual(failed.first?.failure.code, "limitExceeded", "the failure's code")
            try await adapter.retryFailedRecords()
            try expectEqual(try await adapter.pendingChanges(limit: 10).count, 2, "retried records are offered again")
            try await adapter.commit(update)
            try await harness.saveLocally(note("a", title: "smaller"), in: adapter)
            try expectEqual(try await adapter.pendingChanges(limit: 10).count, 2, "a changed failed record is offered again")
            try expect(try await adapter.failedRecords().isEmpty, "a changed record is no longer marked failed")
        },
        AdapterConformanceCase("change signals fire for a new local change while earlier ones are still pending") { harness in
            guard harness.signalsChanges else { return }
            let adapter = try await harness.makeAdapter(zone: zone)
            // A change made during a sync finds the store already changed; it must signal all the
            // same, or it waits for the next interval.
            try await harness.saveLocally(note("pending", title: "not uploaded yet"), in: adapter)
            try await harness.observe(adapter)
            try await expectChangeSignal(from: adapter.changeSignals()) { round in
                try await harness.saveLocally(note("more-\(round)", title: "\(round)"), in: adapter)
            }
        },
        AdapterConformanceCase("change signals fire when the store changes after a sync") { harness in
            guard harness.signalsChanges else { return }
            let adapter = try await harness.makeAdapter(zone: zone)
            try await expectChangeSignal(from: adapter.changeSignals()) { round in
                // Edit, then settle, so each round is a synced → changed transition.
                try await harness.saveLocally(note("s", title: "\(round)"), in: adapter)
                let pending = try await adapter.pendingChanges(limit: 10)
                var update = SyncStateUpdate(zoneState: zoneState("t"))
                for save in pending.saves { update.settled[save.record.id] = save.version }
                try await adapter.commit(update)
            }
        },
    ]
}
