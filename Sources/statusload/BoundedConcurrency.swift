/// Runs `body` for every index in `0..<count`, at most `limit` at a time, in a throwing task group: the first error
/// cancels the rest and is rethrown.
func forEachConcurrently(
    _ count: Int,
    limit: Int,
    _ body: @escaping @Sendable (Int) async throws -> Void
) async throws {
    try await withThrowingTaskGroup(of: Void.self) { group in
        var next = 0
        while next < min(count, max(limit, 1)) {
            let index = next
            group.addTask { try await body(index) }
            next += 1
        }
        while try await group.next() != nil {
            if next < count {
                let index = next
                group.addTask { try await body(index) }
                next += 1
            }
        }
    }
}
