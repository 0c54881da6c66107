extension Array {
    /// The array in consecutive slices of at most `size` elements: the batches a long list of users is read in, one
    /// pipelined round trip each.
    func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
