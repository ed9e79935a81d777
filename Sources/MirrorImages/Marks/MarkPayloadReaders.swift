/// The readers behind ``ImageValidator/readsMarks``, one payload at a time: entry points for unit tests and the
/// fuzzer (`Fuzz/Marks`, which links MirrorImages without testing enabled), so behind `@_spi(Testing)`: not the
/// library's API. An image's marks come from ``ImageValidator/validate(_:)`` with `readsMarks` set.
@_spi(Testing) public enum MarkPayloadReaders {
    /// Reads one XMP packet (UTF-8 RDF/XML) as an image's main packet would be read; its values are located
    /// `"XMP …"`. Returns the marks even when empty.
    public static func readXMPPacket(_ packet: UnsafeRawBufferPointer) -> ImageMarks {
        let bytes = ByteView(packet)
        var collector = MarkCollector()
        collector.sawMarks = true
        XMPReader.read(bytes, in: 0..<bytes.count, origin: "XMP", container: "the input", wantsGUID: false,
                       into: &collector)
        return collector.finished() ?? ImageMarks()
    }

    /// Reads a C2PA manifest store (a JUMBF superbox labelled `c2pa`, as a PNG `caBX` chunk holds it).
    public static func readManifestStore(_ store: UnsafeRawBufferPointer) -> ImageMarks {
        var collector = MarkCollector()
        collector.sawMarks = true
        if store.count > C2PAReader.maxStoreLength {
            collector.note("C2PA manifest store of \(store.count) bytes is over the \(C2PAReader.maxStoreLength)-byte bound; not read")
        } else {
            C2PAReader.read(ByteView(store), container: "the input", otherJUMBFIsExpected: false, into: &collector)
        }
        return collector.finished() ?? ImageMarks()
    }

    /// Decodes one CBOR data item filling `bytes` (``CBORDecoder``).
    public static func decodeCBOR(_ bytes: UnsafeRawBufferPointer) throws(CBORError) -> CBORValue {
        try CBORDecoder.decode(bytes)
    }
}
