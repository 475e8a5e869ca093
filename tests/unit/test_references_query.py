from scholarflow.retrieval.references import asks_about_references


def test_questions_about_citations_include_references() -> None:
    assert asks_about_references("Which papers does it cite on attention?")
    assert asks_about_references("List the references about BM25")
    assert asks_about_references("这篇论文引用了哪些工作？")
    assert asks_about_references("参考文献里有哪些综述")


def test_content_questions_do_not() -> None:
    assert not asks_about_references("What batch size did they use?")
    assert not asks_about_references("A. lwoffii evolved resistance to which antibiotics")
    assert not asks_about_references("这篇论文用了什么数据集？")
