import Foundation
import MirrorImages
import Testing

@Suite("Marks in the samples the real writers made", .timeLimit(.minutes(5)))
struct ImageMarksTests {
    @Test("each consent sample reads as samples.json says", arguments: try ConsentSample.all())
    func readsSample(_ sample: ConsentSample) throws {
        // Given a file exiftool or c2pa-python wrote, and what it was asked to declare
        let data = try sample.data()

        // When it is validated with readsMarks
        let info = try ImageValidator(readsMarks: true).validate(data)

        // Then the image is the one it was made from, and its marks are exactly the declared values, where they were
        // put, with no note
        #expect(info.width == sample.width && info.height == sample.height)
        #expect(info.format.rawValue == sample.format)
        #expect(info.marks?.normalized == sample.expectedMarks?.normalized)
        #expect(info.marks?.notes == (sample.expectedMarks == nil ? nil : []))
    }

    @Test("without readsMarks no sample has marks, and the rest of the answer is the same", arguments: try ConsentSample.all())
    func readsNothingByDefault(_ sample: ConsentSample) throws {
        // Given a sample with marks (or a control)
        let data = try sample.data()

        // When it is validated with the default validator, and with readsMarks
        let plain = try ImageValidator().validate(data)
        var withMarks = try ImageValidator(readsMarks: true).validate(data)

        // Then the default leaves marks nil and otherwise agrees
        #expect(plain.marks == nil)
        withMarks.marks = nil
        #expect(plain == withMarks)
    }

    @Test("samples.json covers every form and container the readers claim")
    func samplesCoverTheReaders() throws {
        // Given the list of samples
        let samples = try ConsentSample.all()

        // Then each container and form is there, so a regenerated set that lost one fails here
        #expect(samples.count == 37)
        for file in [
            "xmp-dmi-prohibited-aimltraining.png", "xmp-dmi-prohibited-aimltraining.webp",
            "xmp-dmi-prohibited-aimltraining.gif", "xmp-attribute-dmi-prohibited-aimltraining-dst-trained.jpg",
            "xmp-resource-dmi-prohibited.gif", "xmp-extended-dmi-in-extension.jpg",
            "c2pa-training-mining-notallowed.png", "c2pa-training-mining-notallowed.webp",
            "c2pa-training-mining-notallowed.gif", "c2pa-multisegment-training-mining-notallowed.jpg",
            "c2pa-cawg-genai-training-constrained.jpg", "plain.jpg",
        ] {
            #expect(samples.contains { $0.file == file }, "\(file)")
        }
    }

    @Test("the controls: no metadata is nil, XMP without the properties is empty")
    func controls() throws {
        // Given the plain copies and an XMP packet with dc:title only
        let plainJPEG = try marks(of: ConsentSample.named("plain.jpg").data())
        let plainPNG = try marks(of: ConsentSample.named("plain.png").data())
        let titleOnly = try marks(of: ConsentSample.named("xmp-dc-title-only.jpg").data())

        // Then only the one with a packet has marks, and they are empty
        #expect(plainJPEG == nil)
        #expect(plainPNG == nil)
        #expect(titleOnly == ImageMarks())
        #expect(titleOnly?.isEmpty == true)
    }

    @Test("a store in three APP11 segments with its training-mining box across a boundary")
    func multisegmentStore() throws {
        // Given the multisegment sample: three APP11 segments, the continuations repeating the superbox header
        let data = try ConsentSample.named("c2pa-multisegment-training-mining-notallowed.jpg").data()
        let app11 = try JPEGSegments(data).all(0xEB)
        #expect(app11.count == 3)
        let firstHeader = data[app11[0].data.lowerBound + 8..<app11[0].data.lowerBound + 16]
        for segment in app11.dropFirst() {
            #expect(data[segment.data.lowerBound + 8..<segment.data.lowerBound + 16] == firstHeader)
        }

        // When it is read
        let read = try #require(try marks(of: data))

        // Then all four entries are there, notAllowed
        #expect(read.trainingMining.count == 4)
        #expect(read.trainingMining.allSatisfy { $0.use == "notAllowed" && $0.label == "c2pa.training-mining" })
        #expect(read.notes.isEmpty)
    }

    @Test("the CAWG constrained entry keeps its constraint_info")
    func constraintInfo() throws {
        let read = try marks(of: ConsentSample.named("c2pa-cawg-genai-training-constrained.jpg").data())
        #expect(read?.trainingMining == [
            ImageMarks.TrainingMiningEntry(
                label: "cawg.training-mining", entry: "cawg.ai_generative_training", use: "constrained",
                constraintInfo: "Licence required: https://example.com/licence"),
        ])
    }

    @Test("BMP, TIFF, AVIF and HEIF are validated without marks")
    func otherFormats() throws {
        for file in ["bgr24.bmp", "little.tiff", "image.avif", "image.heic"] {
            let info = try ImageValidator(readsMarks: true).validate(try Sample.named(file).data())
            #expect(info.marks == nil, "\(file)")
        }
    }
}
