/** ManyMethods: 100 small methods and callAll() calling each once (for MethodChurn). */
public class ManyMethods {
    int m0(int x) { return x + 0; }
    int m1(int x) { return x + 1; }
    int m2(int x) { return x + 2; }
    int m3(int x) { return x + 3; }
    int m4(int x) { return x + 4; }
    int m5(int x) { return x + 5; }
    int m6(int x) { return x + 6; }
    int m7(int x) { return x + 7; }
    int m8(int x) { return x + 8; }
    int m9(int x) { return x + 9; }
    int m10(int x) { return x + 10; }
    int m11(int x) { return x + 11; }
    int m12(int x) { return x + 12; }
    int m13(int x) { return x + 13; }
    int m14(int x) { return x + 14; }
    int m15(int x) { return x + 15; }
    int m16(int x) { return x + 16; }
    int m17(int x) { return x + 17; }
    int m18(int x) { return x + 18; }
    int m19(int x) { return x + 19; }
    int m20(int x) { return x + 20; }
    int m21(int x) { return x + 21; }
    int m22(int x) { return x + 22; }
    int m23(int x) { return x + 23; }
    int m24(int x) { return x + 24; }
    int m25(int x) { return x + 25; }
    int m26(int x) { return x + 26; }
    int m27(int x) { return x + 27; }
    int m28(int x) { return x + 28; }
    int m29(int x) { return x + 29; }
    int m30(int x) { return x + 30; }
    int m31(int x) { return x + 31; }
    int m32(int x) { return x + 32; }
    int m33(int x) { return x + 33; }
    int m34(int x) { return x + 34; }
    int m35(int x) { return x + 35; }
    int m36(int x) { return x + 36; }
    int m37(int x) { return x + 37; }
    int m38(int x) { return x + 38; }
    int m39(int x) { return x + 39; }
    int m40(int x) { return x + 40; }
    int m41(int x) { return x + 41; }
    int m42(int x) { return x + 42; }
    int m43(int x) { return x + 43; }
    int m44(int x) { return x + 44; }
    int m45(int x) { return x + 45; }
    int m46(int x) { return x + 46; }
    int m47(int x) { return x + 47; }
    int m48(int x) { return x + 48; }
    int m49(int x) { return x + 49; }
    int m50(int x) { return x + 50; }
    int m51(int x) { return x + 51; }
    int m52(int x) { return x + 52; }
    int m53(int x) { return x + 53; }
    int m54(int x) { return x + 54; }
    int m55(int x) { return x + 55; }
    int m56(int x) { return x + 56; }
    int m57(int x) { return x + 57; }
    int m58(int x) { return x + 58; }
    int m59(int x) { return x + 59; }
    int m60(int x) { return x + 60; }
    int m61(int x) { return x + 61; }
    int m62(int x) { return x + 62; }
    int m63(int x) { return x + 63; }
    int m64(int x) { return x + 64; }
    int m65(int x) { return x + 65; }
    int m66(int x) { return x + 66; }
    int m67(int x) { return x + 67; }
    int m68(int x) { return x + 68; }
    int m69(int x) { return x + 69; }
    int m70(int x) { return x + 70; }
    int m71(int x) { return x + 71; }
    int m72(int x) { return x + 72; }
    int m73(int x) { return x + 73; }
    int m74(int x) { return x + 74; }
    int m75(int x) { return x + 75; }
    int m76(int x) { return x + 76; }
    int m77(int x) { return x + 77; }
    int m78(int x) { return x + 78; }
    int m79(int x) { return x + 79; }
    int m80(int x) { return x + 80; }
    int m81(int x) { return x + 81; }
    int m82(int x) { return x + 82; }
    int m83(int x) { return x + 83; }
    int m84(int x) { return x + 84; }
    int m85(int x) { return x + 85; }
    int m86(int x) { return x + 86; }
    int m87(int x) { return x + 87; }
    int m88(int x) { return x + 88; }
    int m89(int x) { return x + 89; }
    int m90(int x) { return x + 90; }
    int m91(int x) { return x + 91; }
    int m92(int x) { return x + 92; }
    int m93(int x) { return x + 93; }
    int m94(int x) { return x + 94; }
    int m95(int x) { return x + 95; }
    int m96(int x) { return x + 96; }
    int m97(int x) { return x + 97; }
    int m98(int x) { return x + 98; }
    int m99(int x) { return x + 99; }
    public int callAll() {
        int s = 0;
        s = m0(s);
        s = m1(s);
        s = m2(s);
        s = m3(s);
        s = m4(s);
        s = m5(s);
        s = m6(s);
        s = m7(s);
        s = m8(s);
        s = m9(s);
        s = m10(s);
        s = m11(s);
        s = m12(s);
        s = m13(s);
        s = m14(s);
        s = m15(s);
        s = m16(s);
        s = m17(s);
        s = m18(s);
        s = m19(s);
        s = m20(s);
        s = m21(s);
        s = m22(s);
        s = m23(s);
        s = m24(s);
        s = m25(s);
        s = m26(s);
        s = m27(s);
        s = m28(s);
        s = m29(s);
        s = m30(s);
        s = m31(s);
        s = m32(s);
        s = m33(s);
        s = m34(s);
        s = m35(s);
        s = m36(s);
        s = m37(s);
        s = m38(s);
        s = m39(s);
        s = m40(s);
        s = m41(s);
        s = m42(s);
        s = m43(s);
        s = m44(s);
        s = m45(s);
        s = m46(s);
        s = m47(s);
        s = m48(s);
        s = m49(s);
        s = m50(s);
        s = m51(s);
        s = m52(s);
        s = m53(s);
        s = m54(s);
        s = m55(s);
        s = m56(s);
        s = m57(s);
        s = m58(s);
        s = m59(s);
        s = m60(s);
        s = m61(s);
        s = m62(s);
        s = m63(s);
        s = m64(s);
        s = m65(s);
        s = m66(s);
        s = m67(s);
        s = m68(s);
        s = m69(s);
        s = m70(s);
        s = m71(s);
        s = m72(s);
        s = m73(s);
        s = m74(s);
        s = m75(s);
        s = m76(s);
        s = m77(s);
        s = m78(s);
        s = m79(s);
        s = m80(s);
        s = m81(s);
        s = m82(s);
        s = m83(s);
        s = m84(s);
        s = m85(s);
        s = m86(s);
        s = m87(s);
        s = m88(s);
        s = m89(s);
        s = m90(s);
        s = m91(s);
        s = m92(s);
        s = m93(s);
        s = m94(s);
        s = m95(s);
        s = m96(s);
        s = m97(s);
        s = m98(s);
        s = m99(s);
        return 100;
    }
}
