"""Reading documents and cutting them into chunks: PDF/HTML/text blocks (`blocks`), documents and
their cleaning (`documents`), reference-list detection (`bibliography`), chunking (`chunking`),
the corpus file lists (`corpus_list`)."""
