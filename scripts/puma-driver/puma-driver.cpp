/*
 * puma-driver: one program that builds any PUMA network described in a text file, compiles it
 * with the PUMA compiler (libpuma.so) and writes the compiler's outputs, so that a hunt never
 * compiles C++ per case. It makes the same API calls, in the same order, as a hand-written
 * model against include/puma.h would.
 *
 *   puma-driver NETWORK [WEIGHTS]
 *
 * In the current directory the compiler writes `<model>-tile<T>.puma`,
 * `<model>-tile<T>-core<C>.puma`, `<model>-report.out` and (with pimdiff's placement patch)
 * `<model>-placement.json`; with WEIGHTS, `ModelInstance::generateData` writes
 * `<model>-tile<T>-core<C>-mvmu<M>.weights`; with `option debug on`, the `.dot` graphs.
 *
 * Exit status: 0 when everything was written; 2 when NETWORK or WEIGHTS is malformed (a
 * message `puma-driver: FILE:LINE: what` on stderr, and no library call made). Whatever the
 * library does with a well-formed but unreasonable network (an assert's SIGABRT, a segfault,
 * an endless loop) is left to happen: the caller classifies it.
 *
 * NETWORK format (version 1). Line oriented; `#` starts a comment; blank lines are ignored;
 * tokens are separated by spaces or tabs. Names (models, tensors) are any token not starting
 * with `%`; values are named `%` followed by anything. Numbers are decimal unsigned integers
 * that fit `unsigned int`, except FACTOR (a decimal float, passed to `operator*(float, Vector)`).
 * Statements run in file order, each one API call:
 *
 *   pimdiff-puma-network 1                      first line
 *   model NAME                                  Model::create (second statement)
 *   option coalesce on|off                      CompilerOptions::coalesceMVMOperations_
 *   option partition row-major|col-major|random|kahip    CompilerOptions::gp_
 *   option debug on|off                         CompilerOptions::printDebugInfo_ (.dot graphs)
 *   input-vector NAME LENGTH                    InputVector::create
 *   input-image NAME WIDTH HEIGHT CHANNELS STRIDE    InputImagePixelStream::create
 *   output-vector NAME LENGTH                   OutputVector::create
 *   output-image NAME WIDTH HEIGHT CHANNELS     OutputImagePixelStream::create
 *   matrix NAME WIDTH HEIGHT                    ConstantMatrix::create (WIDTH = input length)
 *   conv-matrix NAME KERNEL_WIDTH KERNEL_HEIGHT IN_CHANNELS OUT_CHANNELS STRIDE OUT_WIDTH OUT_HEIGHT
 *                                               ConvolutionalConstantMatrix::create
 *   let %V = input NAME                         Vector(InputVector) or ImagePixelStream(InputImagePixelStream)
 *   let %V = mvm MATRIX %X                      ConstantMatrix * Vector
 *   let %V = conv MATRIX %X                     ConvolutionalConstantMatrix * ImagePixelStream
 *   let %V = add|sub|mul %A %B                  Vector + - * Vector (element-wise)
 *   let %V = scale FACTOR %X                    FACTOR * Vector
 *   let %V = relu|tanh %X                       relu(Vector), tanh(Vector)
 *   let %V = sig %X                             sig(Vector) or sig(ImagePixelStream)
 *   let %V = maxpool HSPAN WSPAN %X             maxpool(ImagePixelStream, HSPAN, WSPAN)
 *   assign NAME %X                              OutputVector = Vector, OutputImagePixelStream = ImagePixelStream
 *   end                                         last line (a file cut short is an error)
 *
 * Options apply to the one `Model::compile` call made after `end`; the defaults are the
 * library's (coalescing on, row-major partitioning, no debug output). A value's kind (vector or
 * image stream) follows from its operation; using a value of the wrong kind, an undeclared name
 * or value, or a value defined twice is a format error (the C++ API would not compile it).
 * Sizes are not checked: a zero or a mismatch goes to the library as written.
 *
 * WEIGHTS format (version 1): whitespace-separated tokens
 *
 *   pimdiff-puma-weights 1
 *   matrix NAME COUNT  v_1 ... v_COUNT          once per declared matrix, any order
 *   end
 *
 * COUNT must be the matrix's element count: WIDTH·HEIGHT for `matrix`, row-major by output row
 * (`v[row·WIDTH + column]`, row < HEIGHT), and KERNEL_HEIGHT·KERNEL_WIDTH·OUT_CHANNELS·
 * IN_CHANNELS for `conv-matrix`, in the order `v[((kh·KERNEL_WIDTH + kw)·OUT_CHANNELS + out)·
 * IN_CHANNELS + in]` (the layouts ModelInstanceImpl::generateData reads, src/instance.cpp:68
 * and :98). Values are decimal floats; pimdiff writes small integers. Each matrix is bound
 * under its name (ModelInstance::bind) before generateData.
 *
 * Both formats are written by pimdiff's `targets::puma::driver_input` module (Rust), which
 * documents the same grammar.
 */

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "puma.h"

namespace {

[[noreturn]] void fail(const std::string& where, const std::string& what) {
    std::cerr << "puma-driver: " << where << ": " << what << std::endl;
    std::exit(2);
}

std::string at(const std::string& file, unsigned long line) {
    return file + ":" + std::to_string(line);
}

unsigned int parseUnsigned(const std::string& token, const std::string& where) {
    if(token.empty() || token.find_first_not_of("0123456789") != std::string::npos) {
        fail(where, "expected an unsigned integer, found `" + token + "`");
    }
    errno = 0;
    unsigned long long v = std::strtoull(token.c_str(), NULL, 10);
    if(errno != 0 || v > 0xFFFFFFFFull) {
        fail(where, "number out of range for unsigned int: " + token);
    }
    return (unsigned int)v;
}

float parseFloat(const std::string& token, const std::string& where) {
    char* end = NULL;
    errno = 0;
    float v = std::strtof(token.c_str(), &end);
    if(token.empty() || end != token.c_str() + token.size() || errno != 0) {
        fail(where, "expected a decimal number, found `" + token + "`");
    }
    return v;
}

enum Kind { INPUT_VECTOR, INPUT_IMAGE, OUTPUT_VECTOR, OUTPUT_IMAGE, DENSE_MATRIX, CONV_MATRIX, VECTOR, IMAGE };

const char* kindName(Kind k) {
    switch(k) {
        case INPUT_VECTOR: return "an input vector";
        case INPUT_IMAGE: return "an input image stream";
        case OUTPUT_VECTOR: return "an output vector";
        case OUTPUT_IMAGE: return "an output image stream";
        case DENSE_MATRIX: return "a matrix";
        case CONV_MATRIX: return "a conv-matrix";
        case VECTOR: return "a vector value";
        case IMAGE: return "an image stream value";
    }
    return "?";
}

struct Statement {
    std::string where;
    std::vector<std::string> tokens;
};

struct MatrixDecl {
    std::string name;
    unsigned long long count;
};

// The network file, checked for form and kinds; nothing is created yet.
struct Network {
    std::string model;
    CompilerOptions options;
    std::vector<Statement> statements; // declarations, lets and assigns, in file order
    std::vector<MatrixDecl> matrices;
};

class Parser {
    public:
        explicit Parser(const std::string& file) : file_(file) {}

        Network parse() {
            std::ifstream in(file_);
            if(!in) {
                fail(file_, "cannot open the network file");
            }
            std::string text;
            unsigned long number = 0;
            bool sawHeader = false, sawEnd = false;
            while(std::getline(in, text)) {
                ++number;
                std::vector<std::string> tokens = split(text);
                if(tokens.empty()) {
                    continue;
                }
                std::string where = at(file_, number);
                if(sawEnd) {
                    fail(where, "text after `end`");
                }
                if(!sawHeader) {
                    if(tokens.size() != 2 || tokens[0] != "pimdiff-puma-network" || tokens[1] != "1") {
                        fail(where, "the first line must be `pimdiff-puma-network 1`");
                    }
                    sawHeader = true;
                    continue;
                }
                if(tokens[0] == "end" && tokens.size() == 1) {
                    sawEnd = true;
                    continue;
                }
                statement(where, tokens);
            }
            if(!sawHeader) {
                fail(file_, "empty network file");
            }
            if(!sawEnd) {
                fail(file_, "missing `end` (file cut short?)");
            }
            if(net_.model.empty()) {
                fail(file_, "no `model` statement");
            }
            return net_;
        }

    private:
        std::string file_;
        Network net_;
        std::map<std::string, Kind> kinds_;

        static std::vector<std::string> split(const std::string& text) {
            std::string line = text.substr(0, text.find('#'));
            std::vector<std::string> tokens;
            std::istringstream ss(line);
            std::string token;
            while(ss >> token) {
                tokens.push_back(token);
            }
            return tokens;
        }

        void arity(const std::string& where, const std::vector<std::string>& t, size_t n) {
            if(t.size() != n) {
                fail(where, "`" + t[0] + "` takes " + std::to_string(n - 1) + " operands, found " + std::to_string(t.size() - 1));
            }
        }

        void define(const std::string& where, const std::string& name, Kind kind, bool value) {
            if(value != (name[0] == '%') || (value && name.size() < 2)) {
                fail(where, value ? "a value name starts with `%`: `" + name + "`" : "a tensor name must not start with `%`: `" + name + "`");
            }
            if(kinds_.count(name)) {
                fail(where, "`" + name + "` is defined twice");
            }
            kinds_[name] = kind;
        }

        Kind use(const std::string& where, const std::string& name) {
            if(!kinds_.count(name)) {
                fail(where, "`" + name + "` is not defined above");
            }
            return kinds_[name];
        }

        void expect(const std::string& where, const std::string& name, Kind want) {
            Kind k = use(where, name);
            if(k != want) {
                fail(where, "`" + name + "` is " + kindName(k) + ", expected " + kindName(want));
            }
        }

        void statement(const std::string& where, const std::vector<std::string>& t) {
            const std::string& op = t[0];
            if(net_.model.empty() && op != "model") {
                fail(where, "the first statement must be `model NAME`");
            }
            if(op == "model") {
                arity(where, t, 2);
                if(!net_.model.empty()) {
                    fail(where, "a second `model` statement");
                }
                net_.model = t[1];
                return;
            }
            if(op == "option") {
                option(where, t);
                return;
            }
            if(op == "input-vector" || op == "output-vector") {
                arity(where, t, 3);
                parseUnsigned(t[2], where);
                define(where, t[1], op == "input-vector" ? INPUT_VECTOR : OUTPUT_VECTOR, false);
            } else if(op == "input-image") {
                arity(where, t, 6);
                for(size_t i = 2; i < 6; ++i) parseUnsigned(t[i], where);
                define(where, t[1], INPUT_IMAGE, false);
            } else if(op == "output-image") {
                arity(where, t, 5);
                for(size_t i = 2; i < 5; ++i) parseUnsigned(t[i], where);
                define(where, t[1], OUTPUT_IMAGE, false);
            } else if(op == "matrix") {
                arity(where, t, 4);
                unsigned long long w = parseUnsigned(t[2], where), h = parseUnsigned(t[3], where);
                define(where, t[1], DENSE_MATRIX, false);
                net_.matrices.push_back(MatrixDecl{t[1], w*h});
            } else if(op == "conv-matrix") {
                arity(where, t, 9);
                unsigned long long count = 1;
                for(size_t i = 2; i < 9; ++i) {
                    unsigned long long v = parseUnsigned(t[i], where);
                    if(i <= 5) {
                        count *= v; // kernel width, kernel height, in and out channels: < 2^128
                    }
                }
                define(where, t[1], CONV_MATRIX, false);
                net_.matrices.push_back(MatrixDecl{t[1], count});
            } else if(op == "let") {
                let(where, t);
            } else if(op == "assign") {
                arity(where, t, 3);
                Kind out = use(where, t[1]);
                if(out == OUTPUT_VECTOR) {
                    expect(where, t[2], VECTOR);
                } else if(out == OUTPUT_IMAGE) {
                    expect(where, t[2], IMAGE);
                } else {
                    fail(where, "`" + t[1] + "` is " + kindName(out) + ", not an output");
                }
            } else {
                fail(where, "unknown statement `" + op + "`");
            }
            net_.statements.push_back(Statement{where, t});
        }

        void option(const std::string& where, const std::vector<std::string>& t) {
            arity(where, t, 3);
            if(t[1] == "coalesce" || t[1] == "debug") {
                if(t[2] != "on" && t[2] != "off") {
                    fail(where, "`option " + t[1] + "` takes `on` or `off`");
                }
                (t[1] == "coalesce" ? net_.options.coalesceMVMOperations_ : net_.options.printDebugInfo_) = (t[2] == "on");
            } else if(t[1] == "partition") {
                if(t[2] == "row-major") net_.options.gp_ = CompilerOptions::GP_ROW_MAJOR;
                else if(t[2] == "col-major") net_.options.gp_ = CompilerOptions::GP_COL_MAJOR;
                else if(t[2] == "random") net_.options.gp_ = CompilerOptions::GP_RANDOM;
                else if(t[2] == "kahip") net_.options.gp_ = CompilerOptions::GP_KAHIP;
                else fail(where, "unknown partitioning scheme `" + t[2] + "`");
            } else {
                fail(where, "unknown option `" + t[1] + "`");
            }
        }

        void let(const std::string& where, const std::vector<std::string>& t) {
            if(t.size() < 5 || t[2] != "=") {
                fail(where, "expected `let %V = OPERATION OPERANDS...`");
            }
            const std::string& op = t[3];
            Kind result = VECTOR;
            if(op == "input") {
                if(t.size() != 5) fail(where, "`input` takes 1 operand");
                Kind k = use(where, t[4]);
                if(k == INPUT_VECTOR) result = VECTOR;
                else if(k == INPUT_IMAGE) result = IMAGE;
                else fail(where, "`" + t[4] + "` is " + kindName(k) + ", not an input");
            } else if(op == "mvm" || op == "conv") {
                if(t.size() != 6) fail(where, "`" + op + "` takes 2 operands");
                bool conv = (op == "conv");
                expect(where, t[4], conv ? CONV_MATRIX : DENSE_MATRIX);
                expect(where, t[5], conv ? IMAGE : VECTOR);
                result = conv ? IMAGE : VECTOR;
            } else if(op == "add" || op == "sub" || op == "mul") {
                if(t.size() != 6) fail(where, "`" + op + "` takes 2 operands");
                expect(where, t[4], VECTOR);
                expect(where, t[5], VECTOR);
            } else if(op == "scale") {
                if(t.size() != 6) fail(where, "`scale` takes 2 operands");
                parseFloat(t[4], where);
                expect(where, t[5], VECTOR);
            } else if(op == "relu" || op == "tanh") {
                if(t.size() != 5) fail(where, "`" + op + "` takes 1 operand");
                expect(where, t[4], VECTOR);
            } else if(op == "sig") {
                if(t.size() != 5) fail(where, "`sig` takes 1 operand");
                Kind k = use(where, t[4]);
                if(k != VECTOR && k != IMAGE) fail(where, "`" + t[4] + "` is " + kindName(k) + ", not a value");
                result = k;
            } else if(op == "maxpool") {
                if(t.size() != 7) fail(where, "`maxpool` takes 3 operands");
                parseUnsigned(t[4], where);
                parseUnsigned(t[5], where);
                expect(where, t[6], IMAGE);
                result = IMAGE;
            } else {
                fail(where, "unknown operation `" + op + "`");
            }
            define(where, t[1], result, true);
        }
};

// The weights file: one row of values per matrix name, checked against the declarations.
std::map<std::string, std::vector<float> > readWeights(const std::string& file, const Network& net) {
    std::ifstream in(file);
    if(!in) {
        fail(file, "cannot open the weights file");
    }
    std::map<std::string, unsigned long long> expected;
    for(const MatrixDecl& m : net.matrices) {
        expected[m.name] = m.count;
    }
    std::map<std::string, std::vector<float> > weights;
    std::string token, version;
    if(!(in >> token >> version) || token != "pimdiff-puma-weights" || version != "1") {
        fail(file, "the file must start with `pimdiff-puma-weights 1`");
    }
    while(in >> token) {
        if(token == "end") {
            if(in >> token) {
                fail(file, "text after `end`");
            }
            for(const MatrixDecl& m : net.matrices) {
                if(!weights.count(m.name)) {
                    fail(file, "no values for matrix `" + m.name + "`");
                }
            }
            return weights;
        }
        std::string name, countText;
        if(token != "matrix" || !(in >> name >> countText)) {
            fail(file, "expected `matrix NAME COUNT` or `end`, found `" + token + "`");
        }
        if(!expected.count(name)) {
            fail(file, "`" + name + "` is not a matrix of the network");
        }
        if(weights.count(name)) {
            fail(file, "values for matrix `" + name + "` given twice");
        }
        unsigned long long count = std::strtoull(countText.c_str(), NULL, 10);
        if(countText.find_first_not_of("0123456789") != std::string::npos || count != expected[name]) {
            fail(file, "matrix `" + name + "` has " + std::to_string(expected[name]) + " elements, the file says `" + countText + "`");
        }
        std::vector<float>& values = weights[name];
        for(unsigned long long i = 0; i < count; ++i) {
            if(!(in >> token)) {
                fail(file, "matrix `" + name + "` ends after " + std::to_string(i) + " of " + countText + " values");
            }
            values.push_back(parseFloat(token, file + ": matrix `" + name + "`"));
        }
    }
    fail(file, "missing `end` (file cut short?)");
}

// Every handle the statements create, by name.
struct Handles {
    Model model;
    std::map<std::string, InputVector> inputVectors;
    std::map<std::string, InputImagePixelStream> inputImages;
    std::map<std::string, OutputVector> outputVectors;
    std::map<std::string, OutputImagePixelStream> outputImages;
    std::map<std::string, ConstantMatrix> matrices;
    std::map<std::string, ConvolutionalConstantMatrix> convMatrices;
    std::map<std::string, Vector> vectors;
    std::map<std::string, ImagePixelStream> images;
};

unsigned int num(const Statement& s, size_t i) {
    return parseUnsigned(s.tokens[i], s.where);
}

void runLet(Handles& h, const Statement& s) {
    const std::vector<std::string>& t = s.tokens;
    const std::string& id = t[1];
    const std::string& op = t[3];
    if(op == "input") {
        if(h.inputVectors.count(t[4])) h.vectors[id] = Vector(h.inputVectors[t[4]]);
        else h.images[id] = ImagePixelStream(h.inputImages[t[4]]);
    } else if(op == "mvm") {
        h.vectors[id] = h.matrices[t[4]] * h.vectors[t[5]];
    } else if(op == "conv") {
        h.images[id] = h.convMatrices[t[4]] * h.images[t[5]];
    } else if(op == "add") {
        h.vectors[id] = h.vectors[t[4]] + h.vectors[t[5]];
    } else if(op == "sub") {
        h.vectors[id] = h.vectors[t[4]] - h.vectors[t[5]];
    } else if(op == "mul") {
        h.vectors[id] = h.vectors[t[4]] * h.vectors[t[5]];
    } else if(op == "scale") {
        h.vectors[id] = parseFloat(t[4], s.where) * h.vectors[t[5]];
    } else if(op == "relu") {
        h.vectors[id] = relu(h.vectors[t[4]]);
    } else if(op == "tanh") {
        h.vectors[id] = tanh(h.vectors[t[4]]);
    } else if(op == "sig") {
        if(h.vectors.count(t[4])) h.vectors[id] = sig(h.vectors[t[4]]);
        else h.images[id] = sig(h.images[t[4]]);
    } else if(op == "maxpool") {
        h.images[id] = maxpool(h.images[t[6]], num(s, 4), num(s, 5));
    }
}

void run(Handles& h, const Statement& s) {
    const std::vector<std::string>& t = s.tokens;
    const std::string& op = t[0];
    if(op == "input-vector") {
        h.inputVectors[t[1]] = InputVector::create(h.model, t[1], num(s, 2));
    } else if(op == "input-image") {
        h.inputImages[t[1]] = InputImagePixelStream::create(h.model, t[1], num(s, 2), num(s, 3), num(s, 4), num(s, 5));
    } else if(op == "output-vector") {
        h.outputVectors[t[1]] = OutputVector::create(h.model, t[1], num(s, 2));
    } else if(op == "output-image") {
        h.outputImages[t[1]] = OutputImagePixelStream::create(h.model, t[1], num(s, 2), num(s, 3), num(s, 4));
    } else if(op == "matrix") {
        h.matrices[t[1]] = ConstantMatrix::create(h.model, t[1], num(s, 2), num(s, 3));
    } else if(op == "conv-matrix") {
        h.convMatrices[t[1]] = ConvolutionalConstantMatrix::create(h.model, t[1], num(s, 2), num(s, 3), num(s, 4), num(s, 5), num(s, 6), num(s, 7), num(s, 8));
    } else if(op == "let") {
        runLet(h, s);
    } else if(op == "assign") {
        if(h.outputVectors.count(t[1])) h.outputVectors[t[1]] = h.vectors[t[2]];
        else h.outputImages[t[1]] = h.images[t[2]];
    }
}

} // namespace

int main(int argc, char** argv) {
    if(argc < 2 || argc > 3) {
        std::cerr << "usage: puma-driver NETWORK [WEIGHTS]" << std::endl;
        return 2;
    }
    Network net = Parser(argv[1]).parse();
    std::map<std::string, std::vector<float> > weights;
    if(argc == 3) {
        weights = readWeights(argv[2], net);
    }

    std::cout << "puma-driver: building " << net.model << std::endl;
    Handles h;
    h.model = Model::create(net.model);
    for(const Statement& s : net.statements) {
        run(h, s);
    }
    std::cout << "puma-driver: compiling" << std::endl;
    h.model.compile(net.options);
    if(argc == 3) {
        std::cout << "puma-driver: binding weights" << std::endl;
        ModelInstance instance = ModelInstance::create(h.model);
        for(const MatrixDecl& m : net.matrices) {
            instance.bind(m.name, weights[m.name].data());
        }
        instance.generateData();
    }
    h.model.destroy();
    std::cout << "puma-driver: done" << std::endl;
    return 0;
}
