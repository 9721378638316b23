// Placeholder so a layer with no sources yet still forms a valid object library.
