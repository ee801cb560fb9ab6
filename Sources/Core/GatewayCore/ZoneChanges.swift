/// One page of a zone's change feed, as returned by ``CloudDatabase/fetchChanges(in:since:limit:)``.
public struct ZoneChanges: Sendable {
    /// Records saved since the token, in commit order. A record saved several times appears once,
    /// at the position of its latest save.
    public var modified: [Record]
    /// Records deleted since the token (tombstones), in commit order.
    public var deleted: [RecordID]
    /// The position after this page; pass it to the next call.
    public var token: ChangeToken
    /// Whether more changes are waiting after ``token``.
    public var moreComing: Bool

    /// A page of changes: records modified and deleted after the previous token, the token after
    /// them, and whether more follow.
    public init(modified: [Record], deleted: [RecordID], token: ChangeToken, moreComing: Bool) {
        self.modified = modified
        self.deleted = deleted
        self.token = token
        self.moreComing = moreComing
    }
}
