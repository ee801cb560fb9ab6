import Foundation

/// Upload batch sizing (DESIGN §6.4): start at the configured size, halve on `limitExceeded`
/// (floor 1), grow back by 10% (at least 1) after each clean batch up to the configured size but
/// below the smallest size that failed, which is forgotten after an hour.
extension ZoneSyncState {
    /// How long a failed size caps growth.
    public static let failedBatchSizeMemory: TimeInterval = 3600

    /// The batch size to use now.
    public func effectiveBatchSize(configured: Int) -> Int {
        min(max(batchSize ?? configured, 1), configured)
    }

    /// Records that a batch of `size` failed with `limitExceeded` and halves the size.
    public mutating func recordLimitExceeded(size: Int, configured: Int, now: Date) {
        failedBatchSize = min(failedBatchSize ?? size, size)
        failedBatchSizeAt = now
        batchSize = max(1, effectiveBatchSize(configured: configured) / 2)
    }

    /// Records a clean batch and grows the size.
    public mutating func recordCleanBatch(configured: Int, now: Date) {
        if let at = failedBatchSizeAt, now.timeIntervalSince(at) > Self.failedBatchSizeMemory {
            failedBatchSize = nil
            failedBatchSizeAt = nil
        }
        let current = effectiveBatchSize(configured: configured)
        var grown = min(configured, current + max(1, current / 10))
        if let ceiling = failedBatchSize { grown = min(grown, max(ceiling - 1, current)) }
        batchSize = grown == configured ? nil : grown
    }
}
