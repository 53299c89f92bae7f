"""The X-PLOR to CHARMM parameter converter (gpuaccept.probe.xplor_charmm) on the two parameter files of NAMD's
APOA1 input set (the third-party input apoa1, tests/inputs.toml) and on small files that must be refused with file
and line."""

import tarfile

import pytest
from conftest import needs_input

from gpuaccept.probe import xplor_charmm as xc

FILES = ("apoa1/par_all22_prot_lipid.xplor", "apoa1/par_all22_popc.xplor")


@pytest.fixture(scope="module")
def apoa1_params(tmp_path_factory):
    out = tmp_path_factory.mktemp("xplor")
    with tarfile.open(needs_input("apoa1")) as tf:
        tf.extractall(out, members=[tf.getmember(f) for f in FILES], filter="data")
    params = xc.XplorParameters()
    for f in FILES:
        xc.read_xplor(out / f, params)
    return params, [out / f for f in FILES]


def test_every_statement_of_the_apoa1_files_is_read(apoa1_params):
    params, _paths = apoa1_params
    # 1,187 statements in par_all22_prot_lipid.xplor and 5 in par_all22_popc.xplor (grep -c), none repeated.
    counts = (len(params.bonds), len(params.angles), len(params.dihedrals), len(params.impropers),
              len(params.nonbonded), len(params.nbfix))  # fmt: skip
    assert counts == (177, 435, 446, 45, 83, 6) and sum(counts) == 1187 + 5
    assert sum(len(t) > 1 for t in params.dihedrals.values()) == 61  # MULTIPLE= dihedrals
    assert params.dihedrals[("CP1", "C", "N", "CP1")] == [(2.75, 2, 180.0), (0.3, 4, 0.0)]
    assert params.angles[("CA", "CA", "CA")] == (40.0, 120.0, 35.0, 2.4162)  # with Urey-Bradley
    assert params.angles[("CEL1", "CEL1", "CTL2")] == (48.0, 124.0, None, None)  # from par_all22_popc.xplor


def test_charmm_text_has_charmm_signs_and_radii(apoa1_params):
    params, _paths = apoa1_params
    lines = xc.to_charmm(params).splitlines()
    # X-PLOR NONBONDED C 0.1100 3.5636 (eps, sigma) is CHARMM's C -0.110 Rmin/2 2.000
    c = next(line.split() for line in lines if line.startswith("C      0.0 "))
    assert float(c[2]) == pytest.approx(-0.11) and float(c[3]) == pytest.approx(2.0, abs=1e-4)
    # NBFIX SOD OT A=82964.8656 B=439.8946: Emin = B^2/4A, Rmin = (2A/B)^(1/6)
    nbfix = next(line.split() for line in lines if line.startswith("OT     SOD"))
    assert float(nbfix[2]) == pytest.approx(-(439.8946**2) / (4 * 82964.8656))
    assert float(nbfix[3]) == pytest.approx((2 * 82964.8656 / 439.8946) ** (1 / 6))


def test_openmm_reads_the_converted_text_back(apoa1_params, tmp_path):
    app = pytest.importorskip("openmm.app")
    _params, paths = apoa1_params
    prm = tmp_path / "apoa1.prm"
    prm.write_text(xc.convert(paths))
    ps = app.CharmmParameterSet(str(prm), permissive=True)
    assert len(ps.dihedral_types[("CP1", "C", "N", "CP1")]) == 2
    ub = ps.urey_bradley_types[("CA", "CA", "CA")]
    assert ub.req == pytest.approx(2.4162) and ub.k == pytest.approx(35.0)
    assert ps.atom_types_str["C"].epsilon == pytest.approx(-0.11)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("BOND C C 600.0\n", r"x\.xplor:1: BOND needs two types, kb and b0"),
        ("ANGLE A B C 1.0 2.0 UB 3.0\n", r"x\.xplor:1: ANGLE needs three types"),
        ("DIHEDRAL A B C D MULTIPLE= 2 1.0 2 0.0\n", r"ends inside the MULTIPLE dihedral started at .*x\.xplor:1"),
        ("DIHEDRAL A B C D MULTIPLE= 2 1.0 2 0.0\n 3.0 x 0.0\n", r"x\.xplor:2: term of the MULTIPLE dihedral"),
        ("NONBONDED C 0.1 3.5\n", r"x\.xplor:1: NONBONDED needs a type, eps, sigma, eps14, sigma14"),
        ("\n\nCMAP A B C D\n", r"x\.xplor:3: unknown X-PLOR parameter statement 'CMAP'"),
        ("NBONDS\n  CUTNB=13.0\n", r"the file ends inside a NBONDS block"),
    ],
)
def test_bad_statements_are_refused_with_file_and_line(tmp_path, text, message):
    path = tmp_path / "x.xplor"
    path.write_text(text)
    with pytest.raises(xc.XplorError, match=message):
        xc.read_xplor(path)


def test_comments_blocks_and_multiple_terms(tmp_path):
    path = tmp_path / "ok.xplor"
    path.write_text(
        "REMARKS test\n{ a comment\n  over two lines }\nSET ECHO=FALSE END\n"
        "DIHEDRAL A B C D MULTIPLE= 3 1.0 1 0.0 ! first\n ! a comment between terms\n 2.0 2 180.0\n 3.0 3 0.0\n"
        "HBONDS\n  DCUTOFF=7.5\nEND\n REXP= 6 AEXP= 4\nHBON N* O* 0.0 3.0\n"
        "IMPROPER A X X D 100.0 0 0.0\n"
    )
    params = xc.read_xplor(path)
    assert params.dihedrals == {("A", "B", "C", "D"): [(1.0, 1, 0.0), (2.0, 2, 180.0), (3.0, 3, 0.0)]}
    assert params.impropers == {("A", "X", "X", "D"): (100.0, 0, 0.0)}
    assert "A      B      C      D          2.000000 2   180.0000" in xc.to_charmm(params).splitlines()
